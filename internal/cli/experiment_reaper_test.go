package cli

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tare-dev/tare/internal/lab"
)

// TestExperimentKilledMidPause: tare is SIGKILLed while its experiment's lab is paused (frozen: the
// components' death signal waits in the freezer). Its reaper, a child of tare that sees tare's end on a
// pipe, thaws the lab and stops it: no process of it left, its port free, its state gone, and the
// reaper's log says what it did.
func TestExperimentKilledMidPause(t *testing.T) {
	requireLab(t)
	spec := writeSpec(t, `name: killed
target: {lab: {settle: 5s, control_plane_only: true}}
trials: 2
warmup: 1s
window: 20s
variants: [{name: running}, {name: paused, pause: true}]
`)
	out := filepath.Join(t.TempDir(), "killed")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, "experiment", spec, "--out", out, "--lab-dir", t.TempDir())
	cmd.Env = append(os.Environ(), envRunCLI+"=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	dir := filepath.Join(out, "lab")
	defer func() { _, _ = lab.Down(context.Background(), dir, false) }() // after a failure
	var paused *lab.State
	for deadline := time.Now().Add(4 * time.Minute); paused == nil; time.Sleep(100 * time.Millisecond) {
		if st, err := labState(dir); err == nil && st.Paused != nil {
			paused = st
		}
		select {
		case <-exited:
			t.Fatalf("the experiment ended before it paused its lab\n%s", stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			<-exited
			t.Fatalf("the experiment never paused its lab\n%s", stderr.String())
		}
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-exited
	// The reaper's log ends with "done" once every lab is down.
	var left []lab.Process
	var log []byte
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		left = paused.Running()
		log, _ = os.ReadFile(filepath.Join(out, "reaper.log"))
		if len(left) == 0 && strings.HasSuffix(string(log), " done\n") || time.Now().After(deadline) {
			break
		}
	}
	if len(left) > 0 {
		var names []string
		for _, p := range left {
			names = append(names, fmt.Sprintf("%s (PID %d)", p.Name, p.PID))
		}
		t.Errorf("the paused lab's processes %s outlived the killed tare by a minute", strings.Join(names, ", "))
		_, _ = lab.Down(t.Context(), dir, false)
	}
	assertNoLab(t, out)
	if !strings.Contains(string(log), "tare ended without cleaning up") || !strings.Contains(string(log), "thawed first") {
		t.Errorf("reaper.log: %q, want the lab stopped after a thaw", log)
	}
	t.Logf("reaper.log:\n%s", log)
}
