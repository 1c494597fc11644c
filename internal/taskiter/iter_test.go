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

// bpfPasses are the task passes this package loads; each test of a pass runs on every one this kernel has.
var bpfPasses = []taskiter.Pass{taskiter.PassOpenCoded, taskiter.PassBPFIter}

// eachPass runs test as a subtest for each pass, with that pass loaded.
func eachPass(t *testing.T, test func(t *testing.T, it *taskiter.Iter)) {
	for _, p := range bpfPasses {
		t.Run(string(p), func(t *testing.T) { test(t, openIter(t, p)) })
	}
}

// openIter opens the pass p (taskiter.PassAuto: the chain), skipping (or failing, in CI) where the kernel
// does not support it.
func openIter(t testing.TB, p taskiter.Pass) *taskiter.Iter {
	t.Helper()
	testenv.NeedRoot(t, "loading a BPF program needs CAP_BPF and CAP_PERFMON")
	it, err := taskiter.OpenPass(p)
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

// complete runs passes until one is complete and returns the union of what they reported, the latest of
// each group: the groups that moved since before the first (Changed), or every group (All). A pass of
// PassBPFIter is incomplete when a thread of any process on this busy machine was born or ended during the
// walk; its groups are right but others may be missing.
func complete(t testing.TB, pass func([]taskiter.Group) ([]taskiter.Group, error)) []taskiter.Group {
	t.Helper()
	var gs []taskiter.Group
	for try := 1; ; try++ {
		var err error
		gs, err = pass(gs)
		if err == nil {
			break
		}
		if !errors.Is(err, taskiter.ErrIncomplete) || try == 20 {
			t.Fatal(err)
		}
		t.Logf("pass %d: %v", try, err)
	}
	latest := map[int]int{}
	out := gs[:0]
	for _, g := range gs {
		if i, ok := latest[g.TGID]; ok {
			out[i] = g
			continue
		}
		latest[g.TGID] = len(out)
		out = append(out, g)
	}
	return out
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
func TestAllSeesEveryProcess(t *testing.T) { eachPass(t, testAllSeesEveryProcess) }

func testAllSeesEveryProcess(t *testing.T, it *taskiter.Iter) {
	before, started := uint64(ownCPU()), bootNs()
	gs := complete(t, it.All)
	after := uint64(ownCPU())
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
			if (st.start+1)*1e7 > started {
				continue // born during or after the pass (a PID behind the walk is not seen)
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
// previous pass is reported, the CPU of a thread that exited stays in its process's total
// (signal->sum_sched_runtime), and a process whose only work is on a live thread other than its leader is
// reported with it.
func TestChangedFollowsWork(t *testing.T) { eachPass(t, testChangedFollowsWork) }

func testChangedFollowsWork(t *testing.T, it *taskiter.Iter) {
	sleepers := testload.Sleepers(t, 20)
	burners := []*reporterProc{startReporter(t), startReporter(t), startReporter(t)}
	truth := make([]uint64, len(burners))
	for i, b := range burners {
		truth[i] = b.do(t, "cpu")
	}
	// Two passes: the first takes in whatever ran while the helpers started.
	for range 2 {
		complete(t, it.Changed)
		time.Sleep(50 * time.Millisecond)
	}

	// Work: two burners burn on 2 threads, then on a thread that burns and exits; the third burns on one
	// thread, not its leader, that stays; the sleepers sleep.
	for i, b := range burners[:2] {
		b.do(t, "burn 2 150ms")
		truth[i] = b.do(t, "thread 100ms")
	}
	truth[2] = burners[2].do(t, "side 200ms")
	born := testload.Sleepers(t, 1)[0]
	changed := byTGID(complete(t, it.Changed))
	for i, b := range burners {
		pid := b.cmd.Process.Pid
		g, ok := changed[pid]
		if !ok {
			t.Errorf("burner %d is not reported after burning", pid)
			continue
		}
		// The burner is parked when the pass runs: its total is its own last reading plus the little it
		// ran answering (writing the number, going back to read stdin).
		if g.CPUNs < truth[i] || float64(g.CPUNs-truth[i]) > 0.01*testenv.Slowdown()*float64(truth[i]) {
			t.Errorf("burner %d: iterator %d ns, its own clock %d ns (%+.3f%%)", pid, g.CPUNs, truth[i],
				100*(float64(g.CPUNs)-float64(truth[i]))/float64(truth[i]))
		}
		live := liveThreadsCPU(t, pid)
		if i < 2 && g.CPUNs < live+90e6 {
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
	again := byTGID(complete(t, it.Changed))
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

// TestOpenWithoutPrivileges: in a process without CAP_BPF and CAP_PERFMON, the chain and each forced pass
// give an error matching ErrNotSupported that says what to do; a forced pass names itself and the variable
// that forced it.
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
	for _, p := range append([]taskiter.Pass{taskiter.PassAuto}, bpfPasses...) {
		t.Run("pass="+string(p), func(t *testing.T) {
			cmd := exec.Command(exe)
			cmd.Env = append(os.Environ(), helperEnv+"=open", taskiter.PassEnv+"="+string(p))
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
			if forced := "task pass " + string(p) + ", forced by " + taskiter.PassEnv; p != taskiter.PassAuto && !strings.Contains(msg, forced) {
				t.Errorf("error %q does not say %q", msg, forced)
			}
			t.Logf("as nobody: %s", msg)
		})
	}
}

// TestManyGroupsAcrossReads: a pass larger than the kernel's 32 KiB buffer (over 1,000 groups) is read in
// several reads; a group that did not fit in one is written at the next, so each comes out exactly once,
// and its state is kept only once it is out: the next pass reports none of them again.
func TestManyGroupsAcrossReads(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 1,500 processes")
	}
	eachPass(t, testManyGroupsAcrossReads)
}

func testManyGroupsAcrossReads(t *testing.T, it *taskiter.Iter) {
	complete(t, it.Changed)
	sleepers := testload.Sleepers(t, 1500)
	time.Sleep(500 * time.Millisecond) // let them reach their sleep
	first, err := it.Changed(nil)
	if errors.Is(err, taskiter.ErrIncomplete) {
		t.Log(err) // what it reported is still reported once
	} else if err != nil {
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
	second := complete(t, it.Changed)
	again := byTGID(second)
	for _, pid := range sleepers {
		if _, ok := again[pid]; ok {
			t.Errorf("idle sleeper %d reported again in the next pass", pid)
		}
	}
	t.Logf("%d groups (%d bytes) in the first pass, %d in the next", len(first), len(first)*32, len(second))
}

// TestPIDNamespace: in a PID namespace of its own the iterator reports PIDs as that namespace numbers them,
// as its /proc would: the helper alone, as PID 1, with no parent (the parent is outside). Another PID
// namespace as deep runs beside it (as another container's would), whose PID 1 must not be reported: the
// open-coded pass walks every task of the machine, and once reported the other namespace's PID 1 as its
// own (seen when make test's passes ran beside the lab's pods).
func TestPIDNamespace(t *testing.T) { eachPass(t, testPIDNamespace) }

func testPIDNamespace(t *testing.T, it *taskiter.Iter) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	sibling := exec.Command("sleep", "60")
	sibling.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID}
	if err := sibling.Start(); err != nil {
		t.Fatalf("a process in a PID namespace beside the helper's: %v", err)
	}
	t.Cleanup(func() {
		_ = sibling.Process.Kill()
		_ = sibling.Wait()
	})
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), helperEnv+"=pidns", taskiter.PassEnv+"="+string(it.Pass()))
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

// TestThreadStorm: with threads born and ending back to back in one process while passes walk a machine of
// 1,000 more processes, every pass reports that process (made to run before each), or says it is
// incomplete. The bpf-iter pass writes a group whose threads did not add up at the end of the pass, inexact.
// The incomplete passes are PassBPFIter's: a thread born behind its walk, or ended before its visit, leaves
// the group's threads not adding up.
func TestThreadStorm(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 1,000 processes")
	}
	testload.Sleepers(t, 1000)
	eachPass(t, func(t *testing.T, it *taskiter.Iter) {
		r := startReporter(t)
		r.do(t, "storm")
		pid := r.cmd.Process.Pid
		var gs []taskiter.Group
		incomplete, missed, atEnd, twice := 0, 0, 0, 0
		for range 200 {
			// The reporter answers, so it has run; 10 ms later it is long back asleep, and a thread's run
			// time is accounted when it leaves the CPU (not continuously while it runs, which the storm's
			// threads may still be doing on this busy machine).
			r.do(t, "cpu")
			time.Sleep(10 * time.Millisecond)
			var err error
			gs, err = it.Changed(gs[:0])
			if errors.Is(err, taskiter.ErrIncomplete) {
				incomplete++
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			byPID := byTGID(gs)
			if len(byPID) != len(gs) {
				twice++
			}
			g, ok := byPID[pid]
			if !ok {
				missed++
			}
			if g.Inexact {
				atEnd++
			}
		}
		if missed > 0 {
			t.Errorf("the storm %d was left out of %d complete passes", pid, missed)
		}
		if twice > 0 {
			t.Errorf("%d complete passes reported a group twice", twice)
		}
		if d := taskiter.Duplicates(it); d > 0 {
			t.Errorf("the program wrote %d records of groups already written in their pass (a thread born behind the walk after its group was written, or shown after the pass's end)", d)
		}
		t.Logf("%d passes reported the storm as inexact (a thread ended during the walk)", atEnd)
		if it.Pass() == taskiter.PassOpenCoded && incomplete > 0 {
			t.Errorf("%d passes of the open-coded pass incomplete, want none", incomplete)
		}
		t.Logf("%d of 200 passes incomplete", incomplete)
	})
}
