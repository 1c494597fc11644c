package taskiter_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tare-dev/tare/internal/taskiter"
	"github.com/tare-dev/tare/internal/testenv"
	"github.com/tare-dev/tare/internal/testload"
)

// openIter opens the iterator, skipping (or failing, in CI) where the kernel does not support it.
func openIter(t testing.TB) *taskiter.Iter {
	t.Helper()
	testenv.NeedRoot(t, "loading a BPF program needs CAP_BPF and CAP_PERFMON")
	it, err := taskiter.Open()
	if errors.Is(err, taskiter.ErrNotSupported) {
		testenv.Unavailable(t, "%v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := it.Close(); err != nil {
			t.Error(err)
		}
	})
	return it
}

func byTGID(gs []taskiter.Group) map[int]taskiter.Group {
	m := make(map[int]taskiter.Group, len(gs))
	for _, g := range gs {
		m[g.TGID] = g
	}
	return m
}

// TestAllSeesEveryProcess: one pass reports every process /proc lists, with the parent, start time and
// kernel-thread flag that /proc/PID/stat gives, and this test's own CPU between clock readings around it.
func TestAllSeesEveryProcess(t *testing.T) {
	it := openIter(t)
	before := uint64(ownCPU())
	gs, err := it.All(nil)
	if err != nil {
		t.Fatal(err)
	}
	after, passed := uint64(ownCPU()), bootNs()
	all := byTGID(gs)
	if len(all) != len(gs) {
		t.Errorf("%d groups but %d distinct thread groups: a group was reported twice", len(gs), len(all))
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := readStat(pid)
		if err != nil {
			continue // exited meanwhile
		}
		g, ok := all[pid]
		if !ok {
			if st.start*1e7 > passed {
				continue // born after the pass
			}
			// A process root may not inspect (here: this VM's init, which the kernel also keeps out of
			// the iterator) is tolerated; any other is a miss.
			if _, err := os.Readlink("/proc/" + e.Name() + "/ns/pid"); errors.Is(err, os.ErrPermission) {
				t.Logf("pid %d (%s): hidden from root (ns/pid: %v) and missing from the pass", pid, st.comm, err)
				continue
			}
			t.Errorf("pid %d (%s) is in /proc but missing from the pass", pid, st.comm)
			continue
		}
		checked++
		if g.PPID != st.ppid || g.StartNs/1e7 != st.start || g.Kernel != st.kernel {
			t.Errorf("pid %d (%s): iterator says ppid %d, start %d ticks, kernel %v; /proc/%d/stat says %d, %d, %v",
				pid, st.comm, g.PPID, g.StartNs/1e7, g.Kernel, pid, st.ppid, st.start, st.kernel)
		}
	}
	t.Logf("%d groups in the pass, %d checked against /proc/PID/stat", len(gs), checked)
	self, ok := all[os.Getpid()]
	if !ok {
		t.Fatalf("the test process %d is missing from %d groups", os.Getpid(), len(gs))
	}
	// The pass runs on this process's thread, so its CPU lies between the clock readings around it.
	if self.CPUNs < before || self.CPUNs > after {
		t.Errorf("own CPU %d ns outside [%d, %d] read around the pass", self.CPUNs, before, after)
	}
	if self.Kernel || self.Threads < 2 {
		t.Errorf("own group %+v: want a user process with several threads", self)
	}
}

// TestChangedFollowsWork: burners are reported with the CPU they say they used (CLOCK_PROCESS_CPUTIME_ID,
// read by themselves), idle sleepers are not reported once they are asleep, a process born since the
// previous pass is reported, and the CPU of a thread that exited stays in its process's total.
func TestChangedFollowsWork(t *testing.T) {
	it := openIter(t)
	sleepers := testload.Sleepers(t, 20)
	burners := []*reporterProc{startReporter(t), startReporter(t)}
	truth := make([]uint64, len(burners))
	for i, b := range burners {
		truth[i] = b.do(t, "cpu")
	}
	quiet := func() map[int]taskiter.Group {
		t.Helper()
		// Two passes: the first takes in whatever ran while the helpers started.
		var gs []taskiter.Group
		var err error
		for range 2 {
			if gs, err = it.Changed(gs[:0]); err != nil {
				t.Fatal(err)
			}
			time.Sleep(50 * time.Millisecond)
		}
		return byTGID(gs)
	}
	quiet()

	// Work: each burner burns on 2 threads, then a thread that burns and exits; the sleepers sleep.
	for i, b := range burners {
		b.do(t, "burn 2 150ms")
		truth[i] = b.do(t, "thread 100ms")
	}
	born := testload.Sleepers(t, 1)[0]
	gs, err := it.Changed(nil)
	if err != nil {
		t.Fatal(err)
	}
	changed := byTGID(gs)
	for i, b := range burners {
		pid := b.cmd.Process.Pid
		g, ok := changed[pid]
		if !ok {
			t.Errorf("burner %d is not reported after burning 400ms", pid)
			continue
		}
		// The burner is parked when the pass runs: its total is its own last reading plus the little it
		// ran answering (writing the number, going back to read stdin).
		if g.CPUNs < truth[i] || float64(g.CPUNs-truth[i]) > 0.01*float64(truth[i]) {
			t.Errorf("burner %d: iterator %d ns, its own clock %d ns (%+.3f%%)", pid, g.CPUNs, truth[i],
				100*(float64(g.CPUNs)-float64(truth[i]))/float64(truth[i]))
		}
		live := liveThreadsCPU(t, pid)
		if g.CPUNs < live+90e6 {
			t.Errorf("burner %d: iterator %d ns, live threads only %d ns: the exited thread's 100ms is missing", pid, g.CPUNs, live)
		}
		t.Logf("burner %d: iterator %d ns, own clock %d ns, live threads %d ns, %d threads", pid, g.CPUNs, truth[i], live, g.Threads)
	}
	for _, pid := range sleepers {
		if g, ok := changed[pid]; ok {
			t.Errorf("idle sleeper %d reported: %+v", pid, g)
		}
	}
	if _, ok := changed[born]; !ok {
		t.Errorf("process %d, born since the previous pass, is not reported", born)
	}
	// Nothing ran: the next pass does not report the sleepers (the newborn may still be starting up).
	time.Sleep(50 * time.Millisecond)
	gs, err = it.Changed(nil)
	if err != nil {
		t.Fatal(err)
	}
	again := byTGID(gs)
	for _, pid := range sleepers {
		if _, ok := again[pid]; ok {
			t.Errorf("idle sleeper %d reported again", pid)
		}
	}
	t.Logf("%d groups in the pass after the work, %d in the quiet one after it", len(changed), len(again))
}

// liveThreadsCPU sums the run time of a process's live threads (/proc/PID/task/*/schedstat).
func liveThreadsCPU(t *testing.T, pid int) uint64 {
	t.Helper()
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var sum uint64
	for _, e := range ents {
		b, err := os.ReadFile(dir + "/" + e.Name() + "/schedstat")
		if err != nil {
			continue
		}
		var v uint64
		if _, err := fmt.Sscan(string(b), &v); err == nil {
			sum += v
		}
	}
	return sum
}

// TestOpenWithoutPrivileges: a process without CAP_BPF and CAP_PERFMON gets an error matching
// ErrNotSupported that says what to do.
func TestOpenWithoutPrivileges(t *testing.T) {
	testenv.NeedRoot(t, "switching the helper to the nobody user")
	// The helper must be executable by nobody: copy the test binary where it can reach it.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "taskiter-nobody")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	exe := dir + "/taskiter.test"
	if err := os.WriteFile(exe, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), helperEnv+"=open")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helper as nobody: %v\n%s", err, out)
	}
	matches, msg, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	if matches != "true" {
		t.Errorf("error %q does not match ErrNotSupported", msg)
	}
	if !strings.Contains(msg, "run as root") {
		t.Errorf("error %q does not say what to do", msg)
	}
	t.Logf("as nobody: %s", msg)
}

// TestManyGroupsAcrossReads: a pass larger than the kernel's 32 KiB buffer (over 1,000 groups) is read in
// several reads; a group that did not fit in one is written at the next, so each comes out exactly once,
// and its state is kept only once it is out: the next pass reports none of them again.
func TestManyGroupsAcrossReads(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 1,500 processes")
	}
	it := openIter(t)
	if _, err := it.Changed(nil); err != nil {
		t.Fatal(err)
	}
	sleepers := testload.Sleepers(t, 1500)
	time.Sleep(500 * time.Millisecond) // let them reach their sleep
	first, err := it.Changed(nil)
	if err != nil {
		t.Fatal(err)
	}
	count := map[int]int{}
	for _, g := range first {
		count[g.TGID]++
	}
	for _, pid := range sleepers {
		if count[pid] != 1 {
			t.Errorf("sleeper %d reported %d times in the pass after it started, want once", pid, count[pid])
		}
	}
	second, err := it.Changed(nil)
	if err != nil {
		t.Fatal(err)
	}
	again := byTGID(second)
	for _, pid := range sleepers {
		if _, ok := again[pid]; ok {
			t.Errorf("idle sleeper %d reported again in the next pass", pid)
		}
	}
	t.Logf("%d groups (%d bytes) in the first pass, %d in the next", len(first), len(first)*32, len(second))
}

// TestPIDNamespace: in a PID namespace of its own the iterator reports PIDs as that namespace numbers them,
// as its /proc would: the helper alone, as PID 1, with no parent (the parent is outside).
func TestPIDNamespace(t *testing.T) {
	openIter(t) // skips where unsupported
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), helperEnv+"=pidns")
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helper in a new PID namespace: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "1 0 ") {
		t.Errorf("the pass in a new PID namespace reported %q, want only the helper as \"1 0 THREADS\"", lines)
	}
}
