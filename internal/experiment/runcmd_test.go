package experiment

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tare-dev/tare/internal/kernel"
)

// alive says whether a process other than a zombie has the PID.
func alive(pid int) bool {
	st, err := kernel.ReadProcStat("/proc", pid)
	return err == nil && st.State != 'Z'
}

// TestStartRuns: run commands beside three labs start together, each with its replica in the environment
// and its own process group, and one stop ends them all, the one ignoring SIGTERM too (SIGKILL 2 s on).
func TestStartRuns(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var runs []runAt
	for k := 1; k <= 3; k++ {
		run := `echo "$TARE_VARIANT $TARE_REPLICA $KUBECONFIG"; exec sleep 60`
		if k == 3 {
			run = `trap "" TERM; echo "$TARE_VARIANT $TARE_REPLICA $KUBECONFIG"; sleep 60; sleep 60`
		}
		runs = append(runs, runAt{v: Variant{Name: "b", Run: run}, logPath: filepath.Join(dir, "run-"+strconv.Itoa(k)+".log"),
			kubeconfig: "/kc-" + strconv.Itoa(k), replica: k})
	}
	shells, stop, err := startRuns(context.Background(), runs)
	if err != nil {
		t.Fatal(err)
	}
	if len(shells) != 3 {
		t.Fatalf("shells %v, want 3", shells)
	}
	for k, sh := range shells {
		pid := sh.PID
		if !alive(pid) {
			t.Errorf("run %d (PID %d) is not running after the start", k+1, pid)
		}
		if pgid, err := syscall.Getpgid(pid); err != nil || pgid != pid {
			t.Errorf("run %d: process group %d (%v), want its own (%d)", k+1, pgid, err, pid)
		}
		// The start time the shell is matched by is its own, from its stat.
		if st, err := kernel.ReadProcStat("/proc", pid); err != nil || st.Starttime != sh.Start {
			t.Errorf("run %d: start %d, its stat says %d (%v)", k+1, sh.Start, st.Starttime, err)
		}
	}
	stop()
	for k, sh := range shells {
		pid := sh.PID
		if alive(pid) {
			t.Errorf("run %d (PID %d) still runs after stop", k+1, pid)
		}
		b, _ := os.ReadFile(runs[k].logPath)
		if want := "b " + strconv.Itoa(k+1) + " /kc-" + strconv.Itoa(k+1); strings.TrimSpace(string(b)) != want {
			t.Errorf("run %d logged %q, want %q", k+1, b, want)
		}
	}
}

// TestStartRunsExitAtOnce: a run command that exits at once fails the start with its status and output,
// and the commands started beside it are stopped.
func TestStartRunsExitAtOnce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	marker := filepath.Join(dir, "first-pid")
	runs := []runAt{
		{v: Variant{Name: "b", Run: "echo $$ > " + marker + "; exec sleep 60"}, logPath: filepath.Join(dir, "1.log"), replica: 1},
		{v: Variant{Name: "b", Run: "echo no such tool; exit 3"}, logPath: filepath.Join(dir, "2.log"), replica: 2},
	}
	_, _, err := startRuns(context.Background(), runs)
	if err == nil || !strings.Contains(err.Error(), "exit status 3") || !strings.Contains(err.Error(), "no such tool") {
		t.Fatalf("err %v, want the exit status and the command's output", err)
	}
	b, rerr := os.ReadFile(marker)
	if rerr != nil {
		t.Fatal(rerr)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	deadline := time.Now().Add(5 * time.Second)
	for alive(pid) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if alive(pid) {
		t.Errorf("the first run (PID %d) was left running after the second failed", pid)
	}
}
