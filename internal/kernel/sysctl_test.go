package kernel

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestSysctl: ReadSysctl and WriteSysctl on a root of the test's own (a setting written is read back without
// its newline; a missing one is an error naming it), and ReadSysctl on this machine's against sysctl(8).
func TestSysctl(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "sys", "net", "ipv4"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := WriteSysctl(root, "net/ipv4/ip_forward", "1\n"); err != nil {
		t.Fatal(err)
	}
	if v, err := ReadSysctl(root, "net/ipv4/ip_forward"); err != nil || v != "1" {
		t.Errorf("read back %q, %v; want 1", v, err)
	}
	if _, err := ReadSysctl(root, "vm/nothing"); err == nil || !strings.Contains(err.Error(), filepath.Join("vm", "nothing")) {
		t.Errorf("missing setting: %v", err)
	}
	if err := WriteSysctl(root, "vm/nothing", "1"); err == nil || !strings.Contains(err.Error(), "vm/nothing=1") {
		t.Errorf("writing a setting that does not exist: %v", err)
	}
	want, err := exec.Command("sysctl", "-n", "kernel.pid_max").Output()
	if err != nil {
		t.Skipf("sysctl(8): %v", err)
	}
	if v, err := ReadSysctl(HostProc, "kernel/pid_max"); err != nil || v != strings.TrimSpace(string(want)) {
		t.Errorf("kernel/pid_max %q, %v; sysctl says %q", v, err, want)
	}
}

// TestHasLink: every link ip(8) lists is there; a name no link has is not.
func TestHasLink(t *testing.T) {
	out, err := exec.Command("ip", "-o", "link", "show").Output()
	if err != nil {
		t.Skipf("ip(8): %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimSuffix(f[1], ":"), "@")
		if !HasLink(HostSys, name) {
			t.Errorf("ip lists %q, HasLink says it is not there", name)
		}
	}
	if HasLink(HostSys, "tare-no-such0") {
		t.Error("HasLink finds a link no one made")
	}
}
