package testload

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// CPUCgroup creates a cgroup of its own for pid in the hierarchy that accounts CPU (v1 cpuacct, else the v2
// unified root at /sys/fs/cgroup) and returns a reader of the cgroup's cumulative CPU: the scheduler's own
// account of what the process and its children used, a ground truth that is not a per-process counter. The
// cgroup is removed when the test ends.
func CPUCgroup(t testing.TB, name string, pid int) func() time.Duration {
	t.Helper()
	root := "/sys/fs/cgroup/cpuacct"
	if _, err := os.Stat(filepath.Join(root, "cpuacct.usage")); err != nil {
		root = "/sys/fs/cgroup"
	}
	dir := filepath.Join(root, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatalf("creating cgroup %s: %v", dir, err)
	}
	t.Cleanup(func() { removeCgroupTree(root, name) })
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644); err != nil {
		t.Fatalf("moving %d into %s: %v", pid, dir, err)
	}
	return CgroupUsage(t, dir)
}

// CgroupUsage returns a reader of the cumulative CPU of an existing cgroup dir (cpuacct.usage in a v1
// cpuacct hierarchy, else cpu.stat's usage_usec): a pod's cgroup, for instance.
func CgroupUsage(t testing.TB, dir string) func() time.Duration {
	read := cgroupReader(dir)
	return func() time.Duration {
		d, err := read()
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
}

// cgroupReader reads the cumulative CPU of cgroup dir, or why it cannot (the cgroup is gone, say).
func cgroupReader(dir string) func() (time.Duration, error) {
	file := "cpuacct.usage"
	if _, err := os.Stat(filepath.Join(dir, file)); err != nil {
		file = "cpu.stat"
	}
	return func() (time.Duration, error) {
		b, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			return 0, fmt.Errorf("reading %s: %w", dir, err)
		}
		return parseUsage(file, string(b))
	}
}

func parseUsage(file, s string) (time.Duration, error) {
	if file == "cpuacct.usage" {
		ns, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("cpuacct.usage %q: %w", s, err)
		}
		return time.Duration(ns), nil
	}
	for _, line := range strings.Split(s, "\n") {
		if v, ok := strings.CutPrefix(line, "usage_usec "); ok {
			us, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("cpu.stat %q: %w", s, err)
			}
			return time.Duration(us) * time.Microsecond, nil
		}
	}
	return 0, fmt.Errorf("cpu.stat without usage_usec: %q", s)
}

// UsageTrace polls a cgroup's cumulative CPU every 10 ms from start until stop is called, so that a test can
// read the cgroup's CPU over exactly the window a measurement reports (Between), not over the span of the
// call that measured it.
type UsageTrace struct {
	times []time.Time
	usage []time.Duration
	done  chan struct{}
	quit  chan struct{}
}

// TraceUsage starts polling read (a reader from CPUCgroup).
func TraceUsage(read func() time.Duration) *UsageTrace {
	return trace(func() (time.Duration, bool) { return read(), true })
}

// TraceCgroup starts polling the cumulative CPU of cgroup dir, and ends by itself when the cgroup cannot
// be read any more: a pod's, which goes with the pod. Stop then only waits.
func TraceCgroup(dir string) *UsageTrace {
	read := cgroupReader(dir)
	return trace(func() (time.Duration, bool) {
		d, err := read()
		return d, err == nil
	})
}

// slowPoll is how long a poll's read may take and still be kept: the value is placed at the middle of the
// read, so a read held up (a busy machine preempting the poller) would place it up to that far from when
// the counter was read. The trace's last poll is kept whatever it took.
const slowPoll = 2 * time.Millisecond

// trace polls read every 10 ms until Stop is called or read fails.
func trace(read func() (time.Duration, bool)) *UsageTrace {
	tr := &UsageTrace{done: make(chan struct{}), quit: make(chan struct{})}
	poll := func(last bool) bool {
		t0 := time.Now()
		u, ok := read()
		t1 := time.Now()
		if ok && (last || t1.Sub(t0) <= slowPoll) {
			tr.times, tr.usage = append(tr.times, t0.Add(t1.Sub(t0)/2)), append(tr.usage, u)
		}
		return ok
	}
	go func() {
		defer close(tr.done)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for poll(false) {
			select {
			case <-tr.quit:
				poll(true)
				return
			case <-tick.C:
			}
		}
	}()
	return tr
}

// Stop ends the polling.
func (tr *UsageTrace) Stop() {
	if tr.quit == nil {
		return // a trace of recorded points: nothing polls
	}
	close(tr.quit)
	<-tr.done
}

// NewPointTrace is a trace that nothing polls: the caller records its points (a counter another program
// reports with the time it read it), in time order, and reads the trace once it has stopped recording.
func NewPointTrace() *UsageTrace { return &UsageTrace{} }

// Record adds a point to a trace made by NewPointTrace; a point not after the last one is dropped.
func (tr *UsageTrace) Record(at time.Time, usage time.Duration) {
	if n := len(tr.times); n > 0 && !at.After(tr.times[n-1]) {
		return
	}
	tr.times, tr.usage = append(tr.times, at), append(tr.usage, usage)
}

// Between returns the CPU used between a and b, interpolating linearly between polls, in millicores; ok
// is false when the trace does not cover [a, b].
func (tr *UsageTrace) Between(a, b time.Time) (mc float64, ok bool) {
	ua, okA := tr.at(a)
	ub, okB := tr.at(b)
	if !okA || !okB || !b.After(a) {
		return 0, false
	}
	return float64(ub-ua) / float64(b.Sub(a)) * 1000, true
}

// Bounds returns what the polls alone prove of the CPU used between a and b, in millicores of b − a: at
// least what was used between the first poll after a and the last poll before b, at most what was used
// between the last poll before a and the first poll after b. Interpolation (Between) guesses inside that
// range; on a busy machine, where the poller is held up and slow polls are dropped, the range is what a
// comparison may rely on. ok is false when the trace does not cover [a, b] with a poll on each side.
func (tr *UsageTrace) Bounds(a, b time.Time) (lo, hi float64, ok bool) {
	n := len(tr.times)
	if n < 2 || !b.After(a) || a.Before(tr.times[0]) || b.After(tr.times[n-1]) {
		return 0, 0, false
	}
	// i: the first poll at or after a; j: the last poll at or before b.
	i := sort.Search(n, func(k int) bool { return !tr.times[k].Before(a) })
	j := sort.Search(n, func(k int) bool { return tr.times[k].After(b) }) - 1
	outerA, outerB := i, j
	if tr.times[i].After(a) {
		outerA = i - 1
	}
	if tr.times[j].Before(b) {
		outerB = j + 1
	}
	win := float64(b.Sub(a))
	if j > i {
		lo = float64(tr.usage[j]-tr.usage[i]) / win * 1000
	}
	hi = float64(tr.usage[outerB]-tr.usage[outerA]) / win * 1000
	return lo, hi, true
}

func (tr *UsageTrace) at(t time.Time) (time.Duration, bool) {
	if n := len(tr.times); n > 0 {
		// A window edge a poll's length outside the trace is clamped to it: 10 ms of a steady burner.
		if t.Before(tr.times[0]) && tr.times[0].Sub(t) <= 20*time.Millisecond {
			t = tr.times[0]
		}
		if t.After(tr.times[n-1]) && t.Sub(tr.times[n-1]) <= 20*time.Millisecond {
			t = tr.times[n-1]
		}
	}
	for i := 1; i < len(tr.times); i++ {
		if !t.After(tr.times[i]) {
			if t.Before(tr.times[i-1]) {
				return 0, false
			}
			span := tr.times[i].Sub(tr.times[i-1])
			if span <= 0 {
				return tr.usage[i], true
			}
			f := float64(t.Sub(tr.times[i-1])) / float64(span)
			return tr.usage[i-1] + time.Duration(f*float64(tr.usage[i]-tr.usage[i-1])), true
		}
	}
	return 0, false
}

// String says what the trace covers, for failure messages.
func (tr *UsageTrace) String() string {
	if len(tr.times) == 0 {
		return "(empty)"
	}
	return fmt.Sprintf("(%d polls from %s to %s)", len(tr.times), tr.times[0].Format(time.RFC3339Nano), tr.times[len(tr.times)-1].Format(time.RFC3339Nano))
}
