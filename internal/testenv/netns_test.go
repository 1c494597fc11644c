package testenv

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// TestDialFromLeavesNoThreadBehind: after many dials from another network namespace (a child's, made with
// unshare), every thread of this process is in the process's own namespace again. A thread left in the
// other namespace, parked if it is the main thread, would show that namespace's sockets in /proc/self/net:
// CI once saw tare fail to name a port's holder that way.
func TestDialFromLeavesNoThreadBehind(t *testing.T) {
	NeedRoot(t, "entering a network namespace")
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		Unavailable(t, "unshare: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	child := exec.CommandContext(ctx, unshare, "--net", "sleep", "60")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = child.Process.Kill(); _ = child.Wait() }()
	home, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	nsPath := "/proc/" + strconv.Itoa(child.Process.Pid) + "/ns/net"
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if l, err := os.Readlink(nsPath); err == nil && l != home {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never left this process's namespace %s", nsPath, home)
		}
	}
	other, _ := os.Readlink(nsPath)
	dial := DialFrom(nsPath)
	for range 200 {
		// The namespace's loopback is down: the dial fails, in the other namespace, which is all this needs.
		if c, err := dial(ctx, "tcp", "127.0.0.1:9"); err == nil {
			_ = c.Close()
		}
	}
	threads, err := filepath.Glob("/proc/self/task/*/ns/net")
	if err != nil || len(threads) == 0 {
		t.Fatalf("threads: %v %v", threads, err)
	}
	for _, th := range threads {
		if l, err := os.Readlink(th); err == nil && l != home {
			t.Errorf("%s is in %s (the child's is %s), not this process's %s", th, l, other, home)
		}
	}
}
