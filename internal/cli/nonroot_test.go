package cli

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestMeasureAsNonRoot runs tare as the unprivileged user nobody: it measures what it can and says exactly
// what it could not read and why.
func TestMeasureAsNonRoot(t *testing.T) {
	requireRoot(t) // to switch to another user
	out, errOut, err := runAsNobody(t, "measure", "--duration", "2s", "--interval", "500ms")
	if err != nil {
		t.Fatalf("tare as nobody: %v\nstderr: %s\nstdout: %s", err, errOut, out)
	}
	got := out
	for _, want := range []string{
		"cpu source schedstat,",
		"limitation: taskstats: taskstats needs CAP_NET_ADMIN (run tare as root)",
		"smaps_rollup of", "io of", "permission denied (run as root to read other users' processes",
		"short-lived processes: taskstats exit notifications and the proc connector need CAP_NET_ADMIN",
		"CPU busy", "RECONCILIATION", "kernel threads",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output as nobody lacks %q:\n%s", want, got)
		}
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}

// runAsNobody runs tare with args as the unprivileged user nobody (a copy of the test binary in a
// directory nobody can read, as TestMain runs the CLI), and returns its stdout and stderr.
func runAsNobody(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "tare-nonroot") // t.TempDir's parent is private to root
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "tare-under-test")
	copyFile(t, self, bin)
	var out, errOut bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), envRunCLI+"=1")
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = &out, &errOut
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	err = cmd.Run()
	return out.String(), errOut.String(), err
}
