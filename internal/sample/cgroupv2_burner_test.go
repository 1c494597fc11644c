package sample

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tare-dev/tare/internal/kernel"
	"github.com/tare-dev/tare/internal/testenv"
	"github.com/tare-dev/tare/internal/testload"
)

// TestCgroupV2ReferenceAgainstBurners checks tare's exact cgroup v2 reference on this machine's real v2
// hierarchy. Two burners run in child cgroups of their own and one in the root cgroup; the ground truth is
// each burner's own CPU clock (CLOCK_PROCESS_CPUTIME_ID read from outside): each child cgroup's share of the
// reference must be within 1% of it. The whole reference is checked against the v1 root's cpuacct.usage
// where the machine also mounts v1 (an exact peer kept by other kernel code), within 1%, and against
// /proc/stat busy, within its tick resolution. Where the machine's other processes live in the v2 root
// cgroup (hybrid hosts without systemd, like the lab VM) and exit during the window, the reference misses
// what they ran after their last reading: that is allowed, as three times what they ran in their last
// interval read. On a busy machine, processes that start and end between two readings are missed whole,
// as documented: the reference may fall short of its peers by what every process that ended in the window
// ran, by the kernel's own exit records (taskstats exit notifications, each process's whole CPU: an upper
// bound), and by no more.
func TestCgroupV2ReferenceAgainstBurners(t *testing.T) {
	if testing.Short() {
		// With other packages' tests beside it (the -short race pass runs packages in parallel), processes
		// that start and end between two readings in the root cgroup are missed whole, as documented,
		// and the v1 peer counts them (CI once: -1.04% against 1% allowed).
		t.Skip("-short: the whole-node reference against cpuacct.usage runs in the pass that runs packages one at a time")
	}
	testenv.NeedRoot(t, "creating cgroups and moving processes into them")
	dir := refV2Hierarchy(t)
	r, err := NewNodeReader("/proc", "/sys")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.UseCgroupRoot(dir); err != nil {
		t.Fatal(err)
	}
	if r.Reference() != RefCgroupV2 {
		t.Fatalf("reference %s, want %s", r.Reference(), RefCgroupV2)
	}
	tag := fmt.Sprintf("tare-test-ref-%d", os.Getpid())
	burners := []struct {
		mc     int
		cgroup string // "" stays in the root cgroup
		pid    int
	}{{500, tag + "-a", 0}, {300, tag + "-b", 0}, {200, "", 0}}
	for i := range burners {
		b := &burners[i]
		if b.cgroup != "" {
			refChildCgroup(t, filepath.Join(dir, b.cgroup))
		}
		b.pid = testload.StartBurner(t, b.mc)
		if b.cgroup != "" {
			if err := os.WriteFile(filepath.Join(dir, b.cgroup, "cgroup.procs"), []byte(strconv.Itoa(b.pid)), 0o644); err != nil {
				t.Fatalf("moving burner %d into %s: %v", b.pid, b.cgroup, err)
			}
		}
	}
	exits, err := kernel.ListenExits("/sys")
	if err != nil {
		t.Fatal(err)
	}
	defer exits.Close()
	var exited float64 // seconds: what the processes that ended in the window ran in all their lives
	drain := func(count bool) {
		t.Helper()
		recs, err := exits.Drain()
		if err != nil {
			t.Fatal(err)
		}
		if exits.Dropped > 0 {
			t.Fatalf("%d exit notifications dropped: the peer of what the reference misses is lost", exits.Dropped)
		}
		for _, rec := range recs {
			if count {
				exited += float64(rec.CPUNs) / 1e9
			}
		}
	}
	r.TasksCPU() // opens every root thread's schedstat: the baseline below then reads quickly
	time.Sleep(100 * time.Millisecond)
	type snapshot struct {
		ref, v1 float64   // seconds
		v1Gap   float64   // how far apart the two v1 readings bracketing the reference were
		clocks  []float64 // the mean of the burners' clocks before and after the reading
		before  []float64 // the burners' clocks just before it, when it reads the cgroups first
		usage   map[string]uint64
		busy    float64 // /proc/stat user+nice+system+irq+softirq (steal is outside task time here)
		pace    uint64
		at      time.Time
	}
	v1 := refV1Usage()
	snap := func() snapshot {
		var s snapshot
		v1a := v1()
		before := make([]float64, len(burners))
		for i, b := range burners {
			before[i] = refProcessClock(t, b.pid)
		}
		s.ref = float64(r.TasksCPU()) / 1e9
		v1b := v1()
		s.before = before
		s.at = time.Now()
		s.v1, s.v1Gap = (v1a+v1b)/2, v1b-v1a
		for i, b := range burners {
			s.clocks = append(s.clocks, (before[i]+refProcessClock(t, b.pid))/2)
		}
		s.usage = map[string]uint64{}
		for k, v := range r.v2.Usage {
			s.usage[k] = v
		}
		s.pace = r.v2.DepartedPace
		n, _, err := r.Read(true, Node{})
		if err != nil {
			t.Fatal(err)
		}
		s.busy = n.CPU.User + n.CPU.Nice + n.CPU.System + n.CPU.IRQ + n.CPU.SoftIRQ
		return s
	}
	drain(false)
	s0 := snap()
	// Read as the sampler would, ten times a second, so that the root threads are followed as they come
	// and go.
	for time.Since(s0.at) < 3*time.Second {
		time.Sleep(100 * time.Millisecond)
		r.TasksCPU()
		drain(true)
	}
	s1 := snap()
	drain(true)
	secs := s1.at.Sub(s0.at).Seconds()
	t.Logf("window %.2fs, %d threads in the root cgroup, %d left it", secs, r.v2.RootThreads, r.v2.Departed)

	// Each burner in a child cgroup: the cgroup's usage_usec against the burner's own clock.
	var children float64
	for k, v := range s1.usage {
		children += float64(v-s0.usage[k]) / 1e9
	}
	for i, b := range burners {
		own := s1.clocks[i] - s0.clocks[i]
		if b.cgroup != "" {
			own = s1.before[i] - s0.before[i]
		}
		if b.cgroup == "" {
			rootPart := (s1.ref - s0.ref) - children
			t.Logf("burner %dm in the root cgroup: own clock %.4fs; root-cgroup part of the reference %.4fs", b.mc, own, rootPart)
			if rootPart < own*0.99 {
				t.Errorf("the root-cgroup threads ran %.4fs, less than the %.4fs the burner in the root cgroup ran alone", rootPart, own)
			}
			continue
		}
		got := float64(s1.usage[b.cgroup]-s0.usage[b.cgroup]) / 1e9
		t.Logf("burner %dm in %s: own clock %.4fs, reference %.4fs (%+.2f%%)", b.mc, b.cgroup, own, got, 100*(got-own)/own)
		if math.Abs(got-own) > 0.01*own {
			t.Errorf("burner %dm: the reference counts %.4fs of its cgroup, its own clock %.4fs: more than 1%% apart", b.mc, got, own)
		}
	}

	// The whole reference against peers that count every task on the machine.
	ref := s1.ref - s0.ref
	lost := float64(s1.pace-s0.pace) / 1e9 // CPU of root threads that exited after their last reading, roughly
	if v1Avail := s0.v1 > 0; v1Avail {
		peer := s1.v1 - s0.v1
		slack := 0.01*peer + (s0.v1Gap+s1.v1Gap)/2 + 3*lost
		t.Logf("whole node: reference %.4fs, v1 cpuacct.usage %.4fs (%+.2f%%); allowed %.4fs (1%%, read skew, 3 x %.4fs of exiting root threads), and %.4fs less (processes that ended)",
			ref, peer, 100*(ref-peer)/peer, slack, lost, exited)
		if ref-peer > slack || peer-ref > slack+exited {
			t.Errorf("reference %.4fs and the v1 root's cpuacct.usage %.4fs are %.4fs apart, more than %.4fs (%.4fs more below)", ref, peer, ref-peer, slack, exited)
		}
	} else {
		t.Log("no cgroup v1 cpuacct on this machine: the v1 peer check is skipped")
	}
	busy := s1.busy - s0.busy
	res := TickResolution(busy, secs, 250) * secs / 1000
	t.Logf("/proc/stat busy %.4fs (tick resolution ±%.4fs)", busy, res)
	if ref-busy > res+3*lost || busy-ref > res+3*lost+exited {
		t.Errorf("reference %.4fs and /proc/stat busy %.4fs are further apart than the tick resolution ±%.4fs", ref, busy, res)
	}
}

// refV2Hierarchy returns the root of this machine's cgroup v2 hierarchy: /sys/fs/cgroup on a v2 host, or
// /sys/fs/cgroup/unified beside v1.
func refV2Hierarchy(t *testing.T) string {
	t.Helper()
	for _, d := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/unified"} {
		if kernel.IsCgroupV2Root(d) == nil {
			return d
		}
	}
	testenv.Unavailable(t, "no cgroup v2 hierarchy at /sys/fs/cgroup or /sys/fs/cgroup/unified")
	return ""
}

// refChildCgroup creates a cgroup and removes it when the test ends, moving anything left in it back to the
// root first.
func refChildCgroup(t *testing.T, dir string) {
	t.Helper()
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatalf("creating cgroup %s: %v", dir, err)
	}
	t.Cleanup(func() {
		if b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs")); err == nil {
			for _, p := range strings.Fields(string(b)) {
				_ = os.WriteFile(filepath.Join(filepath.Dir(dir), "cgroup.procs"), []byte(p), 0o644)
			}
		}
		deadline := time.Now().Add(2 * time.Second)
		for {
			err := os.Remove(dir)
			if err == nil || os.IsNotExist(err) {
				return
			}
			if time.Now().After(deadline) {
				t.Errorf("removing cgroup %s: %v", dir, err)
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}

// refProcessClock reads another process's CPU clock (CLOCK_PROCESS_CPUTIME_ID as that process sees it: the
// runtime of all its threads, live and exited), in seconds.
func refProcessClock(t *testing.T, pid int) float64 {
	t.Helper()
	var ts unix.Timespec
	// MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED) of the kernel's posix-timers.h.
	if err := unix.ClockGettime(^int32(pid)<<3|2, &ts); err != nil {
		t.Fatalf("reading the CPU clock of %d: %v", pid, err)
	}
	return float64(ts.Nano()) / 1e9
}

// refV1Usage returns a reader of the cgroup v1 root's cpuacct.usage in seconds (0 without v1 cpuacct).
func refV1Usage() func() float64 {
	return func() float64 {
		b, err := os.ReadFile("/sys/fs/cgroup/cpuacct/cpuacct.usage")
		if err != nil {
			return 0
		}
		v, _ := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		return float64(v) / 1e9
	}
}

// BenchmarkCgroupV2Read is the cost of one reading of the cgroup v2 reference on this machine, and per
// thread of its root cgroup.
func BenchmarkCgroupV2Read(b *testing.B) {
	var dir string
	for _, d := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/unified"} {
		if kernel.IsCgroupV2Root(d) == nil {
			dir = d
		}
	}
	if dir == "" {
		testenv.Unavailable(b, "no cgroup v2 hierarchy at /sys/fs/cgroup or /sys/fs/cgroup/unified")
	}
	c, err := kernel.OpenCgroupV2Tasks(dir, "/proc")
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Read(); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		if _, err := c.Read(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(max(1, c.RootThreads)), "ns/thread")
	b.ReportMetric(float64(c.RootThreads), "threads")
}

// TestCgroupV2RootUserProcesses: a v2 root cgroup that holds processes besides kernel threads (here, the
// test's parent when it runs in the root cgroup) is named as a limitation of the reference.
func TestCgroupV2RootUserProcesses(t *testing.T) {
	t.Parallel()
	dir := refV2Hierarchy(t)
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", os.Getppid()))
	if err != nil {
		t.Fatal(err)
	}
	inRoot := strings.Contains("\n"+string(b), "\n0::/\n")
	n := kernel.RootUserProcesses(dir, "/proc")
	r, err := NewNodeReader("/proc", "/sys")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.UseCgroupRoot(dir); err != nil {
		t.Fatal(err)
	}
	named := hasPrefix(r.Limitations(), "cgroup v2 reference: ")
	t.Logf("%d processes besides kernel threads in the root cgroup; the test's parent is there: %v", n, inRoot)
	if inRoot && (n == 0 || !named) || n == 0 && named {
		t.Errorf("%d user processes in the root cgroup (parent there: %v), limitation named: %v (%q)", n, inRoot, named, r.Limitations())
	}
}
