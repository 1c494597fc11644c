package kernel

import (
	"encoding/binary"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

var capture = flag.Bool("capture", false, "capture netlink fixtures from this kernel into testdata/ (needs root)")

// TestCaptureNetlink records real taskstats and proc connector messages as fixtures for the parser tests.
// Run: go test ./internal/kernel -run TestCaptureNetlink -capture
func TestCaptureNetlink(t *testing.T) {
	if !*capture {
		t.Skip("run with -capture to refresh the netlink fixtures")
	}
	fam, err := taskstatsFamily()
	if err != nil {
		t.Fatal(err)
	}
	q, err := openNetlink(fam, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	var val [4]byte
	binary.LittleEndian.PutUint32(val[:], uint32(os.Getpid()))
	if err := q.send(tsAttrTGID, val[:]); err != nil {
		t.Fatal(err)
	}
	n, _, err := unix.Recvfrom(q.fd, q.buf, 0)
	if err != nil {
		t.Fatal(err)
	}
	write(t, "taskstats_tgid_reply.bin", q.buf[:n])

	l, err := ListenExits("/sys")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := exec.Command("sh", "-c", "true").Run(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	n, _, err = unix.Recvfrom(l.sock.fd, l.sock.buf, unix.MSG_DONTWAIT)
	if err != nil {
		t.Fatal(err)
	}
	write(t, "taskstats_exit_notification.bin", l.sock.buf[:n])
}

func write(t *testing.T, name string, b []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join("testdata", name), b, 0o644); err != nil {
		t.Fatal(err)
	}
}
