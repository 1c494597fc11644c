package kernel

import (
	"os/exec"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestCaptureProcConnector records a real fork and a real exec datagram from the proc connector, as seeds
// for the connector's fuzz target. Run: go test ./internal/kernel -run TestCaptureProcConnector -capture
func TestCaptureProcConnector(t *testing.T) {
	if !*capture {
		t.Skip("run with -capture to refresh the proc connector fixtures")
	}
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_CONNECTOR)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK, Groups: cnIdxProc}); err != nil {
		t.Fatal(err)
	}
	// The same subscription WatchExecs sends.
	if err := unix.Sendto(fd, listenMessage(), 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		t.Fatal(err)
	}
	if err := exec.Command("sh", "-c", "true").Run(); err != nil {
		t.Fatal(err)
	}
	want := map[uint32]string{procEventFork: "seeds/proc_connector_fork.bin", procEventExec: "seeds/proc_connector_exec.bin"}
	buf := make([]byte, 64<<10)
	for deadline := time.Now().Add(5 * time.Second); len(want) > 0 && time.Now().Before(deadline); {
		n, _, err := unix.Recvfrom(fd, buf, unix.MSG_DONTWAIT)
		if err != nil {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		_ = parseNetlinkMessages(buf[:n], func(_ uint16, p []byte) error {
			if ev, ok := parseProcEvent(p); ok && want[ev.What] != "" {
				write(t, want[ev.What], buf[:n])
				delete(want, ev.What)
			}
			return nil
		})
	}
	if len(want) > 0 {
		t.Fatalf("no datagram seen for %v", want)
	}
}
