package lab

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"
)

// TestStrayProcesses: a process running a lab program (here a shell under the name kwok) with the lab
// directory on its command line is found as a stray, by the PID it was started as; the same program
// naming another directory is not.
func TestStrayProcesses(t *testing.T) {
	dir, other := t.TempDir(), t.TempDir()
	bin := filepath.Join(t.TempDir(), "kwok")
	if err := os.Symlink("/bin/sh", bin); err != nil {
		t.Fatal(err)
	}
	start := func(d string) *exec.Cmd {
		cmd := exec.Command(bin, "-c", "sleep 30; :", d+"/config")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // its sleep goes with it
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); _ = cmd.Wait() })
		return cmd
	}
	in, out := start(dir), start(other)
	pids := func(ps []Process) []int {
		var out []int
		for _, p := range ps {
			out = append(out, p.PID)
		}
		return out
	}
	// Until the child has exec'd, its command line is the test binary's: poll, up to a deadline.
	var got []int
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if got = pids(strayProcesses(dir)); slices.Contains(got, in.Process.Pid) {
			break
		}
	}
	if !slices.Contains(got, in.Process.Pid) || slices.Contains(got, out.Process.Pid) {
		t.Errorf("strayProcesses(%s) = %v; want PID %d and not %d", dir, got, in.Process.Pid, out.Process.Pid)
	}
}
