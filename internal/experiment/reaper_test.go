package experiment

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestReaperAfterKill: a tare (a helper standing in) starts its reaper and a run command, and is killed.
// The reaper, with no word from tare, stops what the run command started at once (not only on the next
// --resume) and logs it; its lock is free afterwards.
func TestReaperAfterKill(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pids := filepath.Join(dir, "pids")
	helper := startHelper(t, dir, true, "sleep 60 & echo $! >> "+pids+"; sleep 60 & echo $! >> "+pids+"; wait")
	children := readPIDs(t, pids, 2)
	killHelper(helper, "")
	if left := waitGone(children, 10*time.Second); len(left) > 0 {
		t.Fatalf("run command processes %v outlived the killed tare by 10 s: the reaper did not stop them", left)
	}
	unlock := lockWithin(t, dir, 5*time.Second)
	unlock()
	b, _ := os.ReadFile(filepath.Join(dir, "reaper.log"))
	if !strings.Contains(string(b), "tare ended without cleaning up") || !strings.Contains(string(b), "stopped run command processes") {
		t.Errorf("reaper.log says %q, want what it stopped", b)
	}
}

// lockWithin takes the experiment's reaper lock, failing the test if it is not free within d.
func lockWithin(t *testing.T, dir string, d time.Duration) func() {
	t.Helper()
	got := make(chan func(), 1)
	go func() {
		unlock, err := lockReaper(dir)
		if err != nil {
			t.Error(err)
			unlock = func() {}
		}
		got <- unlock
	}()
	select {
	case unlock := <-got:
		return unlock
	case <-time.After(d):
		t.Fatalf("the reaper lock in %s is still held after %v", dir, d)
		return nil
	}
}

// TestReaperReleased: a released reaper exits without touching anything (a run's leftover stays for
// the test to see), and a second tare's reaper waits for the first one's lock, saying so.
func TestReaperReleased(t *testing.T) {
	t.Parallel()
	if !reaperReady.Load() {
		t.Fatal("TestMain did not call Reap")
	}
	dir := t.TempDir()
	bystander := exec.Command("sleep", "60")
	bystander.Env = append(os.Environ(), envExperiment+"="+experimentMark(dir))
	if err := bystander.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bystander.Process.Kill(); _ = bystander.Wait() })

	first, err := startReaper(context.Background(), dir, nil, func(string, ...any) {})
	if err != nil || first == nil {
		t.Fatalf("startReaper: %v, %v", first, err)
	}
	var said atomic.Int32
	second := make(chan *reaper, 1)
	go func() {
		r, err := startReaper(context.Background(), dir, nil, func(f string, _ ...any) {
			if strings.Contains(f, "waiting for another tare on this experiment, or the reaper of an earlier one") {
				said.Add(1)
			}
		})
		if err != nil {
			t.Error(err)
		}
		second <- r
	}()
	if !waitUntil(10*time.Second, func() bool { return said.Load() > 0 }) {
		t.Fatal("a second reaper did not say it waits for the first one's lock")
	}
	select {
	case <-second:
		t.Fatal("a second reaper started while the first held the lock")
	default:
	}
	first.release(true)
	if first.cmd.ProcessState == nil || !first.cmd.ProcessState.Success() {
		t.Errorf("released reaper: %v, want exit status 0", first.cmd.ProcessState)
	}
	select {
	case r := <-second:
		r.release(true)
	case <-time.After(10 * time.Second):
		t.Fatal("the second reaper did not start after the first was released")
	}
	if !alive(bystander.Process.Pid) {
		t.Error("a released reaper stopped a process of the experiment")
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "reaper.log")); len(b) > 0 {
		t.Errorf("released reapers logged %q", b)
	}
}
