package sample

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/tare-dev/tare/internal/kernel"
	"github.com/tare-dev/tare/internal/taskiter"
	"github.com/tare-dev/tare/internal/testenv"
	"github.com/tare-dev/tare/internal/testload"
)

// TestFinalSampleHasEverySmaps: idle processes have memory in every detail sample, and the closing sample
// holds each one's smaps_rollup reading: its PSS is what the sleeper's own smaps_rollup, read by the test
// after the run, says.
func TestFinalSampleHasEverySmaps(t *testing.T) {
	eachTaskPass(t, testFinalSampleHasEverySmaps)
}

func testFinalSampleHasEverySmaps(t *testing.T) {
	testenv.NeedRoot(t, "taskstats and other users' smaps_rollup need root")
	const n = 200
	pids := testload.Sleepers(t, n)
	waitSleeping(t, pids)
	const interval = 200 * time.Millisecond
	s, err := New(context.Background(), Options{Interval: interval, Detail: interval}, nil) // every sample a detail one
	if errors.Is(err, taskiter.ErrNotSupported) {
		testenv.Unavailable(t, "%v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var samples []Sample
	for range 3 {
		smp, err := s.Sample()
		if err != nil {
			t.Fatal(err)
		}
		samples = append(samples, smp)
		time.Sleep(interval)
	}
	last, err := s.SampleFinal()
	if err != nil {
		t.Fatal(err)
	}
	samples = append(samples, last)
	ids := map[int64]int{}
	for _, x := range samples {
		for _, p := range x.New {
			ids[p.ID] = p.Key.PID
		}
	}
	byPID := map[int]map[int]ProcSample{} // pid -> seq -> row
	for _, x := range samples {
		for _, ps := range x.Procs {
			if pid, ok := ids[ps.ID]; ok && ps.HasDetail {
				if byPID[pid] == nil {
					byPID[pid] = map[int]ProcSample{}
				}
				byPID[pid][x.Seq] = ps
			}
		}
	}
	smapsLater := 0
	for _, pid := range pids {
		rows := byPID[pid]
		if len(rows) != len(samples) {
			t.Errorf("sleeper %d has memory in %d of %d detail samples", pid, len(rows), len(samples))
			continue
		}
		if rows[0].RSS == 0 {
			t.Errorf("sleeper %d: no resident memory at the baseline", pid)
		}
		m := testload.SmapsRollup(t, pid)
		got, want := rows[last.Seq].PSS, m["Pss"]
		if rows[0].PSS != want {
			smapsLater++
		}
		// Sleepers share libc's pages: their PSS moves a little as processes come and go meanwhile.
		if math.Abs(float64(got)-float64(want)) > 0.1*float64(want) {
			t.Errorf("sleeper %d: PSS %d in the closing sample, its smaps_rollup says %d", pid, got, want)
		}
	}
	t.Logf("%d sleepers: %d with a baseline PSS other than their smaps_rollup's (read from statm), all with smaps_rollup's in the closing sample", n, smapsLater)
}

// waitSleeping waits until every process of pids sleeps: a sleeper still starting runs.
func waitSleeping(t *testing.T, pids []int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for _, pid := range pids {
		for {
			st, err := kernel.ReadProcStat("/proc", pid)
			if err != nil {
				t.Fatal(err)
			}
			if st.State == 'S' {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("sleeper %d not asleep after 30s", pid)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}
