package sample

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/tare-dev/tare/internal/kernel"
	"github.com/tare-dev/tare/internal/testenv"
)

// TestSamplerBaselineZombieBelowParent: PIDs wrap (pid_max is 32768 on small machines), so a child can have
// a lower PID than its parent and be listed first. A child that burned CPU and ended before the window,
// still a zombie when the baseline lists it, is baseline: when its parent (this test process) reaps it
// inside the window, the reap must not be credited as new CPU. The child gets a PID below this process's
// through ns_last_pid; the ground truth is the child's own CPU in its zombie's stat, spent before the
// first sample.
func TestSamplerBaselineZombieBelowParent(t *testing.T) {
	testenv.NeedRoot(t, "taskstats and ns_last_pid need root")
	child := startBelow(t, os.Getpid())
	var zombie *kernel.ProcStat
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if st, err := kernel.ReadProcStat("/proc", child.Process.Pid); err == nil && st.State == 'Z' {
			zombie = &st
			break
		}
	}
	if zombie == nil {
		_ = child.Process.Kill()
		_ = child.Wait()
		t.Fatal("the child did not end within 10 s")
	}
	s, err := New(context.Background(), Options{Interval: 100 * time.Millisecond, Detail: time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Sample(); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait() // the reap, inside the window
	ppid := map[int64]int{}
	var credited uint64
	for i := range 4 {
		if i == 1 {
			// Another child ends in the window: this process's cutime is then read, the reap above in it.
			if err := exec.Command("true").Run(); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(100 * time.Millisecond)
		smp, err := s.Sample()
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range smp.New {
			ppid[p.ID] = p.PPID
		}
		for _, p := range smp.Procs {
			if ppid[p.ID] == os.Getpid() {
				credited += p.CPUNs // this process's children, and their synthetic "children reaped by"
			}
		}
	}
	own := zombie.OwnTimeNs()
	t.Logf("child PID %d (this process %d) ran %.0f ms before the window; credited in it %.1f ms", child.Process.Pid, os.Getpid(), float64(own)/1e6, float64(credited)/1e6)
	if own < 100e6 {
		t.Fatalf("the child ran %.0f ms, too little to tell", float64(own)/1e6)
	}
	if credited > own/10 {
		t.Errorf("the reap of a baseline zombie was credited %.1f ms in the window (it ran %.0f ms before it)", float64(credited)/1e6, float64(own)/1e6)
	}
}

// startBelow starts a shell that burns about half a second of CPU and exits, with a PID below below
// (through /proc/sys/kernel/ns_last_pid); it is not reaped until Wait.
func startBelow(t *testing.T, below int) *exec.Cmd {
	t.Helper()
	for try := range 50 {
		pid := 300 + (below-400)*try/50
		if pid >= below {
			break
		}
		c, err := startAtPID(pid, func(got int) bool { return got < below }, "sh", "-c", "i=0; while [ $i -lt 400000 ]; do i=$((i+1)); done")
		if errors.Is(err, errNoPIDChoice) {
			testenv.Unavailable(t, "%v", err)
		}
		if err != nil {
			t.Fatal(err)
		}
		if c != nil {
			return c
		}
	}
	testenv.Unavailable(t, "no free PID below this process's")
	return nil
}
