package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tare-dev/tare/internal/lab"
	"github.com/tare-dev/tare/internal/lab/labtest"
)

// TestLabPortInUse: a port the lab needs is taken; up names it and its holder and starts nothing.
func TestLabPortInUse(t *testing.T) {
	requireLab(t)
	ln, err := net.Listen("tcp", ":6443")
	if err != nil {
		t.Skipf("port 6443 is already taken on this machine: %v", err)
	}
	defer ln.Close()
	dir := labtest.TempDir(t)
	_, _, err = run(context.Background(), "lab", "up", "--dir", dir)
	want := fmt.Sprintf("port 6443 (for kube-apiserver) is in use by PID %d", os.Getpid())
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("up with 6443 taken: %v, want %q", err, want)
	}
	if left := lab.Leftovers(dir, true); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

// TestLabComponentDies: a component that exits during start is reported with its log tail, and
// everything started before it is stopped; the logs stay for a look.
func TestLabComponentDies(t *testing.T) {
	requireLab(t)
	dir := labtest.TempDir(t)
	_, _, err := run(context.Background(), "lab", "up", "--dir", dir, "--set", "kube-apiserver.no-such-flag=1")
	if err == nil {
		t.Fatal("up with a bad apiserver flag succeeded")
	}
	for _, want := range []string{"kube-apiserver exited during start", "unknown flag: --no-such-flag", "everything the lab started was stopped"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if left := lab.Leftovers(dir, true); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
	if _, err := os.Stat(filepath.Join(dir, "logs", "kube-apiserver.log")); err != nil {
		t.Errorf("the failing component's log is gone: %v", err)
	}
	if _, _, err := run(context.Background(), "lab", "status", "--dir", dir); !errors.Is(err, lab.ErrNotRunning) {
		t.Errorf("status after a failed up: %v, want no lab", err)
	}
}

// TestLabDownAfterKill9: tare is killed with SIGKILL in the middle of up; down still finds and stops
// everything (from the state written after each step and from the command lines) and cleans up.
func TestLabDownAfterKill9(t *testing.T) {
	requireLab(t)
	dir := labtest.TempDir(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, "lab", "up", "--dir", dir)
	cmd.Env = append(os.Environ(), envRunCLI+"=1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		if st, err := labState(dir); err == nil {
			// kube-proxy starts last on node 1, with the controllers, after etcd, the API server,
			// containerd and the kubelet: up is then past half-way, with every kind of process running.
			if _, ok := st.Process("kube-proxy"); ok {
				break
			}
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatal("up never started kube-proxy")
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	st, err := labState(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Running()) < 5 {
		t.Fatalf("expected the started components to outlive tare, running: %v", st.Running())
	}
	out, errOut, err := run(context.Background(), "lab", "down", "--dir", dir)
	if err != nil {
		t.Fatalf("down after kill -9: %v\n%s%s", err, out, errOut)
	}
	if left := lab.Leftovers(dir, true); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
	for _, p := range st.Processes {
		if err := syscall.Kill(p.PID, 0); err == nil {
			if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.PID)); !strings.Contains(string(b), ") Z ") {
				t.Errorf("%s (PID %d) still runs", p.Name, p.PID)
			}
		}
	}
}

// TestLabAsNonRoot: without root the lab is control plane only with kwok nodes, and says so.
func TestLabAsNonRoot(t *testing.T) {
	requireLab(t)
	// nobody cannot read root's cache: give it a readable one with the programs it needs.
	cache, err := os.MkdirTemp("", "tare-cache-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(cache) })
	root, err := lab.CacheDir()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{
		"k8s/" + lab.KubernetesVersion + "/bin/kube-apiserver", "k8s/" + lab.KubernetesVersion + "/bin/kube-controller-manager",
		"k8s/" + lab.KubernetesVersion + "/bin/kube-scheduler", "kwok/" + lab.KwokVersion + "/bin/kwok", "kwok/" + lab.KwokVersion + "/stages.yaml",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(cache, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Link(filepath.Join(root, f), filepath.Join(cache, f)); err != nil {
			copyFile(t, filepath.Join(root, f), filepath.Join(cache, f))
		}
	}
	_ = filepath.Walk(cache, func(p string, _ os.FileInfo, _ error) error { return os.Chmod(p, 0o755) })
	dir := labtest.TempDir(t)
	if err := os.Chown(dir, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(cache, "tare-under-test")
	copyFile(t, self, bin)
	asNobody := func(args ...string) (string, error) {
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), envRunCLI+"=1", "TARE_CACHE_DIR="+cache, "HOME="+dir)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		b, err := cmd.CombinedOutput()
		return string(b), err
	}
	out, err := asNobody("lab", "up", "--dir", dir, "--kwok-nodes", "2")
	if err != nil {
		t.Fatalf("lab up as nobody: %v\n%s", err, out)
	}
	for _, want := range []string{"not root: starting a control-plane-only lab", "2 kwok nodes Ready", "probe pod Running", "control plane only"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if out, err := asNobody("lab", "status", "--dir", dir); err != nil || strings.Contains(out, "kubelet") {
		t.Errorf("status as nobody: %v\n%s", err, out)
	}
	if out, err := asNobody("lab", "down", "--dir", dir); err != nil {
		t.Errorf("lab down as nobody: %v\n%s", err, out)
	}
	if left := lab.Leftovers(dir, false); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}
