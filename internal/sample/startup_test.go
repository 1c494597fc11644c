package sample

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/tare-dev/tare/internal/taskiter"
	"github.com/tare-dev/tare/internal/testenv"
	"github.com/tare-dev/tare/internal/testload"
)

// TestBaselineDefersIdleSmaps: the baseline sample does not walk the page tables of the processes it finds
// (smaps_rollup): with 1,500 idle sleepers, the baseline makes fewer read system calls than a baseline that
// reads every smaps_rollup at once (a closing sample taken first, which does) by at least one smaps_rollup
// read per process, as the test counts them reading the sleepers' smaps_rollup itself. The counts come from
// the kernel (/proc/self/io syscr), the CPU from this process's rusage, not from the sampler.
func TestBaselineDefersIdleSmaps(t *testing.T) {
	testenv.NeedRoot(t, "taskstats and other users' smaps_rollup need root")
	if testing.Short() {
		t.Skip("starts 1,500 processes")
	}
	const n = 1500
	pids := testload.Sleepers(t, n)
	testload.WaitSleeping(t, pids)
	// The peer: read system calls, and CPU, of reading each sleeper's smaps_rollup once.
	rollupReads, rollupCPU := readEach(t, pids, "smaps_rollup")
	type base struct {
		reads int
		cpu   time.Duration
	}
	baseline := func(final bool) base {
		s, err := New(context.Background(), Options{Interval: time.Second, Detail: 5 * time.Second}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		take := s.Sample
		if final {
			take = s.SampleFinal
		}
		reads, cpu := readSyscalls(t), selfCPU()
		smp, err := take()
		if err != nil {
			t.Fatal(err)
		}
		b := base{readSyscalls(t) - reads, selfCPU() - cpu}
		if len(smp.New) < n {
			t.Fatalf("the baseline lists %d processes, fewer than the %d sleepers", len(smp.New), n)
		}
		return b
	}
	// Twice each, interleaved, keeping the cheaper: the machine is shared.
	deferred, eager := baseline(false), baseline(true)
	for range 1 {
		d, e := baseline(false), baseline(true)
		deferred.reads, deferred.cpu = min(deferred.reads, d.reads), min(deferred.cpu, d.cpu)
		eager.reads, eager.cpu = min(eager.reads, e.reads), min(eager.cpu, e.cpu)
	}
	per := func(d time.Duration) float64 { return float64(d) / 1e3 / n }
	t.Logf("baseline of %d sleepers: %d read calls and %.1f µs of CPU a sleeper, smaps_rollup deferred; %d and %.1f µs read at once; the test's own read of a smaps_rollup: %.1f calls, %.1f µs",
		n, deferred.reads/n, per(deferred.cpu), eager.reads/n, per(eager.cpu), float64(rollupReads)/n, per(rollupCPU))
	if saved := eager.reads - deferred.reads; saved < rollupReads*9/10 {
		t.Errorf("the baseline made %d read calls, %d fewer than reading every smaps_rollup at once: want at least %d fewer (one smaps_rollup of each of %d sleepers)",
			deferred.reads, saved, rollupReads*9/10, n)
	}
	if saved := eager.cpu - deferred.cpu; saved < rollupCPU/2 {
		t.Errorf("the baseline took %v of CPU, %v less than reading every smaps_rollup at once: want at least half of the %v the test took to read them",
			deferred.cpu, saved, rollupCPU)
	}
}

// TestFinalSampleHasEverySmaps: the processes the baseline found idle have memory in every detail sample
// (statm's, until their smaps_rollup turn), and the closing sample of a run shorter than the turns holds
// each one's smaps_rollup reading or a look-alike's: its PSS is what the sleeper's own smaps_rollup, read by
// the test after the run, says.
func TestFinalSampleHasEverySmaps(t *testing.T) {
	eachTaskPass(t, testFinalSampleHasEverySmaps)
}

func testFinalSampleHasEverySmaps(t *testing.T) {
	testenv.NeedRoot(t, "taskstats and other users' smaps_rollup need root")
	const n = 200
	pids := testload.Sleepers(t, n)
	testload.WaitSleeping(t, pids)
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
		// Sleepers share libc's pages: their PSS moves a little as processes come and go meanwhile, and most
		// follow a look-alike's reading (lookalike.go): a sleeper that alone maps a few file pages has them
		// counted as shared as the look-alike's (8 pages more, in one of 800 sleepers).
		if math.Abs(float64(got)-float64(want)) > 0.1*float64(want)+32<<10 {
			t.Errorf("sleeper %d: PSS %d in the closing sample, its smaps_rollup says %d", pid, got, want)
		}
	}
	t.Logf("%d sleepers: %d with a baseline PSS other than their smaps_rollup's (read from statm), all with their own or a look-alike's in the closing sample", n, smapsLater)
}

// TestExactBaselineReadsSmaps: a caller that asks for the baseline's memory exactly (Options.ExactBaseline,
// as tare density does) has every idle sleeper's smaps_rollup at the baseline: its PSS is what the
// sleeper's own smaps_rollup, read by the test, says, and it is not marked StatmOnly. Without the option the
// same baseline marks the sleepers it read from statm, and their PSS is statm's estimate, not smaps_rollup's.
func TestExactBaselineReadsSmaps(t *testing.T) {
	testenv.NeedRoot(t, "taskstats and other users' smaps_rollup need root")
	const n = 100
	pids := testload.Sleepers(t, n)
	testload.WaitSleeping(t, pids)
	baseline := func(exact bool) map[int]ProcSample {
		s, err := New(context.Background(), Options{Interval: time.Second, Detail: time.Second, ExactBaseline: exact}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		smp, err := s.Sample()
		if err != nil {
			t.Fatal(err)
		}
		return memoryRows(smp, smp)
	}
	exact, deferred := baseline(true), baseline(false)
	marked := 0
	for _, pid := range pids {
		want := testload.SmapsRollup(t, pid)["Pss"]
		e, ok := exact[pid]
		if !ok {
			t.Errorf("sleeper %d: no memory in the exact baseline", pid)
			continue
		}
		// Sleepers share libc's pages: their PSS moves a little as processes come and go meanwhile.
		if e.StatmOnly || math.Abs(float64(e.PSS)-float64(want)) > 0.1*float64(want) {
			t.Errorf("sleeper %d: exact baseline PSS %d (statm only: %v), its smaps_rollup says %d", pid, e.PSS, e.StatmOnly, want)
		}
		d, ok := deferred[pid]
		if !ok {
			t.Errorf("sleeper %d: no memory in the deferred baseline", pid)
			continue
		}
		if d.StatmOnly {
			marked++
			if statm := statmAnon(t, pid); d.PSS != statm {
				t.Errorf("sleeper %d: deferred baseline PSS %d marked statm only, its statm's anonymous resident bytes are %d", pid, d.PSS, statm)
			}
		}
	}
	// A sleeper's smaps_rollup is read at once only if it ran between its listing and its reading.
	if marked < n*9/10 {
		t.Errorf("the deferred baseline marks %d of %d idle sleepers as read from statm only: want at least %d", marked, n, n*9/10)
	}
	t.Logf("%d sleepers: exact baseline PSS from smaps_rollup for all, deferred baseline statm only for %d", n, marked)
}

// statmAnon is a process's resident pages less its shared ones, in bytes, from its statm as the test reads it.
func statmAnon(t *testing.T, pid int) uint64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/statm", pid))
	if err != nil {
		t.Fatal(err)
	}
	var size, resident, shared uint64
	if _, err := fmt.Sscan(string(b), &size, &resident, &shared); err != nil {
		t.Fatalf("statm of %d: %v", pid, err)
	}
	return (resident - min(shared, resident)) * uint64(os.Getpagesize())
}

// readEach reads file of every process in pids once, into a buffer large enough for it, and returns the
// read system calls (syscr) and CPU that took.
func readEach(t *testing.T, pids []int, file string) (int, time.Duration) {
	t.Helper()
	buf := make([]byte, 64<<10)
	reads, cpu := readSyscalls(t), selfCPU()
	for _, pid := range pids {
		f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/" + file)
		if err != nil {
			t.Fatal(err)
		}
		// One read, as tare reads these one-record files: the kernel returns all of it into a larger buffer.
		if n, err := f.Read(buf); err != nil || n == len(buf) {
			t.Fatalf("reading %s of %d in one read: %d bytes, %v", file, pid, n, err)
		}
		_ = f.Close()
	}
	return readSyscalls(t) - reads, selfCPU() - cpu
}

// memoryRows maps the PID of each process the baseline base found to its row in smp, when that row has
// memory (HasDetail).
func memoryRows(base, smp Sample) map[int]ProcSample {
	ids := map[int64]int{}
	for _, p := range base.New {
		ids[p.ID] = p.Key.PID
	}
	rows := map[int]ProcSample{}
	for _, ps := range smp.Procs {
		if pid, ok := ids[ps.ID]; ok && ps.HasDetail {
			rows[pid] = ps
		}
	}
	return rows
}
