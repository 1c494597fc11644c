package sample

import (
	"context"
	"errors"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/tare-dev/tare/internal/taskiter"
	"github.com/tare-dev/tare/internal/testenv"
	"github.com/tare-dev/tare/internal/testload"
)

// TestIdleLookAlikes: a short run's closing sample gives every idle process the PSS and private memory its
// own smaps_rollup says (read by the test after the run, with a parser of its own), whether it was read or
// follows a look-alike (within 10% and 16 KiB: look-alikes share their libraries' pages a little
// differently); and it reads few of them: its read system calls (the kernel's syscr) are fewer than one
// statm of each process it has memory of, plus the smaps_rollup of half the processes started here, as the
// test counts them itself. Beside
// 600 sleepers of one kind, helpers of one executable hold 8, 8 and 32 MiB of their own: one of the 8 MiB
// ones may follow the other, the 32 MiB one may follow neither.
func TestIdleLookAlikes(t *testing.T) {
	eachTaskPass(t, testIdleLookAlikes)
}

func testIdleLookAlikes(t *testing.T) {
	testenv.NeedRoot(t, "taskstats and other users' smaps_rollup need root")
	const n = 600
	pids := testload.Sleepers(t, n)
	for _, mib := range []int{8, 8, 32} {
		p := testload.Launch(t, "grow")
		p.Send(t, strconv.Itoa(mib<<10))
		if l := p.Line(t, 10*time.Second); l != "ok" {
			t.Fatalf("grow helper: %q", l)
		}
		pids = append(pids, p.Pid())
	}
	testload.WaitSleeping(t, pids)
	statmReads, _ := readEach(t, pids, "statm")
	rollupReads, _ := readEach(t, pids, "smaps_rollup")
	s, err := New(context.Background(), Options{Interval: time.Second, Detail: time.Second}, nil)
	if errors.Is(err, taskiter.ErrNotSupported) {
		testenv.Unavailable(t, "%v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	base, err := s.Sample()
	if err != nil {
		t.Fatal(err)
	}
	reads := readSyscalls(t)
	last, err := s.SampleFinal()
	if err != nil {
		t.Fatal(err)
	}
	finalReads := readSyscalls(t) - reads
	ids := map[int64]int{}
	for _, p := range base.New {
		ids[p.ID] = p.Key.PID
	}
	rows := map[int]ProcSample{}
	withMemory := 0 // processes of the node whose memory the closing sample has: each has its statm read
	for _, ps := range last.Procs {
		if ps.HasDetail {
			withMemory++
		}
		if pid, ok := ids[ps.ID]; ok && ps.HasDetail {
			rows[pid] = ps
		}
	}
	for _, pid := range pids {
		got, ok := rows[pid]
		if !ok {
			t.Errorf("process %d has no memory in the closing sample", pid)
			continue
		}
		m := testload.SmapsRollup(t, pid)
		// Sleepers share libc's pages: their PSS moves a little as processes come and go meanwhile.
		for _, f := range []struct {
			name      string
			got, want uint64
		}{{"PSS", got.PSS, m["Pss"]}, {"private", got.Private, m["Private_Clean"] + m["Private_Dirty"]}} {
			if got.StatmOnly || math.Abs(float64(f.got)-float64(f.want)) > 0.1*float64(f.want)+16<<10 {
				t.Errorf("process %d: %s %d in the closing sample (statm only: %v), its smaps_rollup says %d", pid, f.name, f.got, got.StatmOnly, f.want)
			}
		}
	}
	statms := withMemory * statmReads / len(pids)
	t.Logf("%d idle processes started, %d with memory in the closing sample, which made %d read calls; reading each started one's statm took %d, each smaps_rollup %d; %s",
		len(pids), withMemory, finalReads, statmReads, rollupReads, s.likes.limitation())
	if limit := statms + rollupReads/2; finalReads > limit {
		t.Errorf("the closing sample made %d read calls: want at most %d (the statm of each of the %d processes with memory, %d, and the smaps_rollup of half the %d started, %d)",
			finalReads, limit, withMemory, statms, len(pids), rollupReads/2)
	}
}
