package lab

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tare-dev/tare/internal/kernel"
)

// reaperHelperEnv makes the test binary a stand-in for tare: it starts a reaper with the job in the
// variable, has it watch the lab directory in reaperHelperLabEnv, says "watching" and waits to be killed.
const (
	reaperHelperEnv    = "TARE_LAB_TEST_REAPER_JOB"
	reaperHelperLabEnv = "TARE_LAB_TEST_REAPER_LAB"
)

// reaperHelper is the stand-in's life (called from TestMain).
func reaperHelper(lock, labDir string) {
	r, err := StartReaper(context.Background(), ReaperJob{Lock: lock, What: "the helper", RemoveLabs: true}, func(string, ...any) {})
	if err == nil && r == nil {
		err = fmt.Errorf("no reaper: TestMain does not route it")
	}
	if err == nil {
		err = r.Watch(labDir)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println("watching")
	select {}
}

// TestReaperStopsAWatchedLab: a tare (the helper) starts its reaper, then tells it of a lab started
// after it (Watch), and is killed. The reaper, with no word from tare, stops the lab's process as lab
// down would, removes its directory (RemoveLabs, as a test binary's reaper does), and logs what it did.
func TestReaperStopsAWatchedLab(t *testing.T) {
	t.Parallel()
	lock, labDir := t.TempDir(), t.TempDir()
	// The lab: a control-plane-only state (nothing machine-wide to undo) recording one process.
	comp := exec.Command("sleep", "60")
	comp.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := comp.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = comp.Wait(); close(exited) }()
	t.Cleanup(func() { _ = comp.Process.Kill(); <-exited })
	ps, err := kernel.ReadProcStat("/proc", comp.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	st := &State{Version: stateVersion, Dir: labDir, ControlOnly: true,
		Processes: []Process{{Name: "kwok", PID: comp.Process.Pid, StartTicks: ps.Starttime, Args: comp.Args}}}
	if err := st.save(); err != nil {
		t.Fatal(err)
	}

	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	helper := exec.Command(self, "-test.run=^$")
	helper.Env = append(os.Environ(), reaperHelperEnv+"="+lock, reaperHelperLabEnv+"="+labDir)
	out, err := helper.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = helper.Process.Kill(); _ = helper.Wait() })
	said := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		said <- strings.TrimSpace(line)
	}()
	select {
	case s := <-said:
		if s != "watching" {
			t.Fatalf("the helper said %q, not watching", s)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the helper did not start its reaper in 15 s")
	}
	if err := helper.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = helper.Wait()
	select {
	case <-exited:
	case <-time.After(15 * time.Second):
		t.Fatal("the lab's process outlived the killed tare by 15 s: the reaper did not stop the lab")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := AwaitReaperLock(ctx, lock, func(string, ...any) {}); err != nil { // the reaper has ended
		t.Fatal(err)
	}
	if _, err := os.Stat(labDir); !os.IsNotExist(err) {
		t.Errorf("the lab's directory is still there after the reaper (RemoveLabs): %v", err)
	}
	b, _ := os.ReadFile(filepath.Join(lock, "reaper.log"))
	if !strings.Contains(string(b), "the helper ended without cleaning up") || !strings.Contains(string(b), "stopped 1 processes") {
		t.Errorf("reaper.log says %q, want the lab it stopped", b)
	}
}

// TestReaperReleased: a released reaper exits without touching anything (a marked process stays, and
// so does a lab it watches), a second reaper on the same lock waits for the first one's, saying so, and
// a reaper with RemoveLock removes its directory when released.
func TestReaperReleased(t *testing.T) {
	t.Parallel()
	if !reaperReady.Load() {
		t.Fatal("TestMain did not call Reap")
	}
	dir := t.TempDir()
	mark := &EnvMark{Name: "TARE_LAB_TEST_MARK", Value: dir}
	bystander := exec.Command("sleep", "60")
	bystander.Env = append(os.Environ(), mark.Name+"="+mark.Value)
	if err := bystander.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bystander.Process.Kill(); _ = bystander.Wait() })

	first, err := StartReaper(context.Background(), ReaperJob{Lock: dir, Mark: mark}, func(string, ...any) {})
	if err != nil || first == nil {
		t.Fatalf("StartReaper: %v, %v", first, err)
	}
	var said atomic.Int32
	second := make(chan *Reaper, 1)
	go func() {
		r, err := StartReaper(context.Background(), ReaperJob{Lock: dir, Mark: mark}, func(f string, _ ...any) {
			if strings.Contains(f, "waiting for another tare on this experiment, or the reaper of an earlier one") {
				said.Add(1)
			}
		})
		if err != nil {
			t.Error(err)
		}
		second <- r
	}()
	if !WaitUntil(10*time.Second, func() bool { return said.Load() > 0 }) {
		t.Fatal("a second reaper did not say it waits for the first one's lock")
	}
	select {
	case <-second:
		t.Fatal("a second reaper started while the first held the lock")
	default:
	}
	first.Release(true)
	if !first.ExitedOK() {
		t.Errorf("released reaper: %v, want exit status 0", first.cmd.ProcessState)
	}
	select {
	case r := <-second:
		r.Release(true)
	case <-time.After(10 * time.Second):
		t.Fatal("the second reaper did not start after the first was released")
	}
	if st, err := kernel.ReadProcStat("/proc", bystander.Process.Pid); err != nil || st.State == 'Z' {
		t.Error("a released reaper stopped a marked process")
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "reaper.log")); len(b) > 0 {
		t.Errorf("released reapers logged %q", b)
	}

	own := filepath.Join(t.TempDir(), "own")
	if err := os.Mkdir(own, 0o755); err != nil {
		t.Fatal(err)
	}
	r, err := StartReaper(context.Background(), ReaperJob{Lock: own, RemoveLock: true}, func(string, ...any) {})
	if err != nil {
		t.Fatal(err)
	}
	r.Release(true)
	if _, err := os.Stat(own); !os.IsNotExist(err) {
		t.Errorf("a released reaper with RemoveLock left %s (%v)", own, err)
	}
}
