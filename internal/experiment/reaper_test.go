package experiment

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tare-dev/tare/internal/lab"
)

// TestReaperAfterKill: a tare (a helper standing in) starts its reaper (lab.StartReaper with the
// experiment's job) and a run command, and is killed. The reaper, with no word from tare, stops what the
// run command started at once (not only on the next --resume) and logs it; its lock is free afterwards.
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
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := lab.AwaitReaperLock(ctx, dir, func(string, ...any) {}); err != nil {
		t.Fatalf("the reaper lock in %s: %v", dir, err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "reaper.log"))
	if !strings.Contains(string(b), "tare ended without cleaning up") || !strings.Contains(string(b), "stopped run command processes") {
		t.Errorf("reaper.log says %q, want what it stopped", b)
	}
}
