package sample

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tare-dev/tare/internal/kernel"
	"github.com/tare-dev/tare/internal/testenv"
	"github.com/tare-dev/tare/internal/testload"
)

// TestSamplerLockedProcess: a process whose memory-map lock is held (a page fault waiting on a hung FUSE
// server, an mmap queued behind it) costs its own command line and memory detail, never the sample. Every
// sample completes within an interval plus one read deadline, a calibrated burner is measured as usual, the
// locked process is named [comm] and reported in the limitations, and once the lock is let go its files are
// read again.
func TestSamplerLockedProcess(t *testing.T) {
	testenv.NeedRoot(t, "mounting the FUSE file system that locks the helper's memory map")
	// Every sample is a detail sample, so the locked process's memory is asked for in each.
	const interval = 250 * time.Millisecond
	opts := Options{Interval: interval, Detail: interval}
	const rate = 100 // millicores: little enough to get even on a loaded node
	burner := testload.StartBurner(t, rate)
	// A first sample reads every process of the node: how long that takes here, before any is locked.
	firstTook := firstSampleTook(t, opts)
	s, err := New(context.Background(), opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// The baseline comes first: a process it finds idle has its smaps_rollup read later, on its turn
	// (refresh.go), and the locked process is to be read at first sight, as every process started during the
	// window is.
	base, err := s.Sample()
	if err != nil {
		t.Fatal(err)
	}
	locked := startLockedProcess(t)
	// Its reads wait (below): it must not be one whose reads skip the deadline (kernel.ProcStat.Quiet).
	if st, err := kernel.ReadProcStat("/proc", locked.pid); err != nil || st.Quiet() {
		t.Errorf("the locked process (state %c, %d threads, %v) is quiet: its reads would skip the deadline", st.State, st.NumThreads, err)
	}

	samples := append([]Sample{base}, sampleFor(t, s, 2*time.Second, interval, locked.release)...)
	lockedSamples := samples
	checkTook(t, "locked", samples, 2*firstTook+interval+kernel.BlockingReadTimeout, interval+kernel.BlockingReadTimeout)
	info, ok := findNew(samples, locked.pid)
	if !ok {
		t.Fatalf("the locked process %d is missing from the samples", locked.pid)
	}
	if want := "[" + locked.comm + "]"; info.Cmdline != want {
		t.Errorf("locked process named %q, want %q (its cmdline cannot be read)", info.Cmdline, want)
	}
	// The peer: statm, which the kernel answers from the memory counters without the map's lock, read by
	// the test itself. The locked process cannot run, so its resident set stays what statm says.
	wantRSS := statmRSS(t, locked.pid)
	details := 0
	for _, ps := range procSamples(samples, info.ID) {
		if !ps.HasDetail {
			continue
		}
		details++
		if ps.PSS != 0 || ps.RSS != wantRSS {
			t.Errorf("sample of the locked process with RSS %d, PSS %d: want statm's RSS %d and no PSS (smaps_rollup cannot be read)", ps.RSS, ps.PSS, wantRSS)
		}
	}
	if details == 0 {
		t.Error("the locked process has no detail sample")
	}
	prefix := fmt.Sprintf("reading /proc/%d/cmdline (%s): no answer within %v", locked.pid, locked.comm, kernel.BlockingReadTimeout)
	smaps := fmt.Sprintf("reading /proc/%d/smaps_rollup (%s): skipped", locked.pid, locked.comm)
	for _, want := range []string{prefix, smaps} {
		if !hasLimitation(s.Meta(), want, "no answer yet") {
			t.Errorf("limitations %q\nsay nothing starting with %q", s.Meta().Limitations, want)
		}
	}
	if n := kernel.BlockingReads("/proc").TimedOut(locked.pid); n != 1 {
		t.Errorf("reads of the locked process waited out the deadline %d times, want once (then skipped)", n)
	}
	start := time.Now()
	if _, _, err := kernel.CmdlineReader("/proc")(locked.pid, true); !errors.Is(err, kernel.ErrStuck) || time.Since(start) > kernel.BlockingReadTimeout/2 {
		t.Errorf("exec watcher's read of the locked process: %v after %v, want kernel.ErrStuck at once", err, time.Since(start))
	}

	locked.release()
	waitAnswered(t, kernel.BlockingReads("/proc"), 0, 5*time.Second)
	samples = sampleFor(t, s, 7*interval, interval, func() {}) // spans a sixth detail sample, which re-reads memory
	checkTook(t, "released", samples, interval+kernel.BlockingReadTimeout, interval+kernel.BlockingReadTimeout)
	var pss uint64
	for _, ps := range procSamples(samples, info.ID) {
		pss = max(pss, ps.PSS)
	}
	// The peer: the Pss line of smaps_rollup read by the test. Pages it shares with the test process (the
	// same binary) move its share a little as the test runs, hence 20%.
	if want := rollupPSS(t, locked.pid); math.Abs(float64(pss)-float64(want)) > 0.2*float64(want) {
		t.Errorf("PSS of the released process %d, smaps_rollup says %d: smaps_rollup was not read again", pss, want)
	}
	id, err := kernel.ReadIdentity("/proc", locked.pid)
	if err != nil || !strings.HasSuffix(id.Cmdline, " "+lockedHelperArg) {
		t.Errorf("command line of the released process: %q, %v", id.Cmdline, err)
	}
	if !testing.Short() { // the race detector slows the burner's regulation too
		checkRate(t, lockedSamples, samples, burner, rate)
	}
	if n := kernel.BlockingReads("/proc").TimedOut(locked.pid); n != 1 {
		t.Errorf("after the release, reads of the process had waited out the deadline %d times, want once", n)
	}
	if !hasLimitation(s.Meta(), prefix, "it answered after") {
		t.Errorf("limitations %q\ndo not say that %d answered in the end", s.Meta().Limitations, locked.pid)
	}
}

// statmRSS is a process's resident set in bytes by /proc/PID/statm (pages × the page size).
func statmRSS(t *testing.T, pid int) uint64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/statm", pid))
	if err != nil {
		t.Fatal(err)
	}
	var size, resident uint64
	if _, err := fmt.Sscan(string(b), &size, &resident); err != nil {
		t.Fatalf("statm %q: %v", b, err)
	}
	return resident * uint64(os.Getpagesize())
}

// rollupPSS is a process's proportional set size in bytes by the Pss line of /proc/PID/smaps_rollup.
func rollupPSS(t *testing.T, pid int) uint64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		var kb uint64
		if _, err := fmt.Sscanf(line, "Pss: %d kB", &kb); err == nil {
			return kb << 10
		}
	}
	t.Fatalf("no Pss line in smaps_rollup:\n%s", b)
	return 0
}

// waitAnswered waits until at most n reads of the shared reader are still waiting.
func waitAnswered(t *testing.T, r *kernel.BlockingReader, n int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for r.Waiting() > n {
		if time.Now().After(deadline) {
			t.Fatalf("%d reads still waiting after %v, want at most %d", r.Waiting(), within, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// sampleFor runs the sampling loop for d and returns its samples. A loop that has not ended 30 s later is
// stuck: unstick releases what it waits for, and the test fails.
func sampleFor(t *testing.T, s *Sampler, d, interval time.Duration, unstick func()) []Sample {
	t.Helper()
	var out []Sample
	keep := func(x Sample) { out = append(out, x) }
	done := make(chan error, 1)
	go func() { done <- Loop(context.Background(), s, d, interval, keep, func(msg string) { t.Log(msg) }) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(d + 30*time.Second):
		unstick()
		<-done
		t.Fatalf("the sampling loop of %v was still running 30s after its end: stuck behind the locked process", d)
	}
	return out
}

// firstSampleTook returns how long the first sample of a new sampler takes to read.
func firstSampleTook(t *testing.T, opts Options) time.Duration {
	t.Helper()
	s, err := New(context.Background(), opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	x, err := s.Sample()
	if err != nil {
		t.Fatal(err)
	}
	return x.Took
}

// checkTook fails the test if the first sample took longer than first to read, or another one longer than
// limit. With -short (the race detector's pass, where tare runs ten times slower) it only logs.
func checkTook(t *testing.T, phase string, samples []Sample, first, limit time.Duration) {
	t.Helper()
	var took []string
	slow := false
	for i, x := range samples {
		took = append(took, x.Took.Round(time.Millisecond).String())
		slow = slow || x.Took > limit && (i > 0 || x.Took > first)
	}
	if slow && !testing.Short() {
		t.Errorf("%s: samples took %s; want the first within %v, the others within %v", phase, strings.Join(took, " "),
			first.Round(time.Millisecond), limit)
	} else {
		t.Logf("%s: samples took %s", phase, strings.Join(took, " "))
	}
}

func findNew(samples []Sample, pid int) (ProcInfo, bool) {
	for _, x := range samples {
		for _, p := range x.New {
			if p.Key.PID == pid {
				return p, true
			}
		}
	}
	return ProcInfo{}, false
}

func procSamples(samples []Sample, id int64) []ProcSample {
	var out []ProcSample
	for _, x := range samples {
		for _, ps := range x.Procs {
			if ps.ID == id {
				out = append(out, ps)
			}
		}
	}
	return out
}

// checkRate compares the burner's CPU with the rate it is regulated to. Over the samples after the stalled
// one it must agree within 5%. Over the whole window, the stall delays the burner's first reading by up to
// the first sample's Took (the span a sample's readings are spread over): the expected CPU is widened by that.
func checkRate(t *testing.T, locked, released []Sample, pid, rate int) {
	t.Helper()
	info, ok := findNew(locked, pid)
	if !ok {
		t.Fatalf("the burner %d is missing from the samples", pid)
	}
	cpu, elapsed := cpuOver(append(locked[2:len(locked):len(locked)], released...), info.ID)
	got := float64(cpu) / float64(elapsed) * 1000
	if rel := math.Abs(got-float64(rate)) / float64(rate); rel > 0.05 {
		t.Errorf("burner of %dm read as %.1fm over %v after the stall (%.1f%% off, allowed 5%%)", rate, got, elapsed, rel*100)
	} else {
		t.Logf("burner of %dm read as %.1fm over %v after the stall", rate, got, elapsed)
	}
	cpu, elapsed = cpuOver(locked[1:], info.ID)
	lo := float64(elapsed-locked[0].Took) * float64(rate) / 1000 * 0.95
	hi := float64(elapsed+locked[len(locked)-1].Took) * float64(rate) / 1000 * 1.05
	if float64(cpu) < lo || float64(cpu) > hi {
		t.Errorf("burner of %dm credited %v over the %v window with the stall; want %v to %v",
			rate, time.Duration(cpu), elapsed, time.Duration(lo), time.Duration(hi))
	} else {
		t.Logf("burner of %dm credited %v over the %v window with the stall (%v to %v expected)",
			rate, time.Duration(cpu), elapsed, time.Duration(lo), time.Duration(hi))
	}
}

// cpuOver sums the CPU credited to id, and the elapsed time, over the intervals ending at samples.
func cpuOver(samples []Sample, id int64) (cpu uint64, elapsed time.Duration) {
	for _, x := range samples {
		elapsed += x.Elapsed
	}
	for _, ps := range procSamples(samples, id) {
		cpu += ps.CPUNs
	}
	return cpu, elapsed
}

func hasLimitation(m Meta, prefix, suffix string) bool {
	for _, l := range m.Limitations {
		if strings.HasPrefix(l, prefix) && strings.Contains(l, "; "+suffix) {
			return true
		}
	}
	return false
}
