package kernel

import (
	"context"
	"encoding/binary"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"

	"github.com/tare-dev/tare/internal/testenv"
	"github.com/tare-dev/tare/internal/testload"
)

// TestConnectorFilter holds the exec watcher's socket filter to the kernel's own datagrams. An unfiltered
// subscription records every event while a helper process starts (fork, exec), starts and ends threads
// (testload's churn: a thread every 20 ms), and exits. The filter, run on each recorded datagram by
// x/net/bpf's VM, must keep the helper's fork and exec and drop its threads' forks and every exit. The
// datagrams are decoded here at cn_proc.h's offsets, not by the code under test.
func TestConnectorFilter(t *testing.T) {
	testenv.NeedRoot(t, "the proc connector needs CAP_NET_ADMIN")
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_CONNECTOR)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 8<<20)
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK, Groups: cnIdxProc}); err != nil {
		t.Fatal(err)
	}
	if err := unix.Sendto(fd, listenMessage(), 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		t.Fatal(err)
	}
	cmd := testload.Command("churn", "50")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // about 15 threads come and go
	_ = stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	child := uint32(cmd.Process.Pid)

	vm, err := bpf.NewVM(connectorFilter())
	if err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	const (
		fork, exec, exit = 0x1, 0x2, 0x80000000
		what, data       = 16 + 20, 16 + 20 + 16 // after nlmsghdr and cn_msg; event_data after what, cpu, timestamp
	)
	var forks, execs, threadForks, exits int
	buf := make([]byte, 64<<10)
	for deadline := time.Now().Add(5 * time.Second); exits == 0 && time.Now().Before(deadline); {
		n, _, err := unix.Recvfrom(fd, buf, unix.MSG_DONTWAIT)
		if err != nil {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		d := buf[:n]
		if n < data+16 {
			continue
		}
		kept, err := vm.Run(d)
		if err != nil {
			t.Fatal(err)
		}
		ev := d[data:]
		switch le.Uint32(d[what:]) {
		case fork: // parent_pid, parent_tgid, child_pid, child_tgid
			if le.Uint32(ev[12:]) != child {
				continue
			}
			if le.Uint32(ev[8:]) == child {
				forks++
				if kept == 0 {
					t.Error("the filter drops the helper's fork")
				}
			} else {
				threadForks++
				if kept != 0 {
					t.Errorf("the filter keeps the start of the helper's thread %d", le.Uint32(ev[8:]))
				}
			}
		case exec: // process_pid, process_tgid
			if le.Uint32(ev[4:]) == child {
				execs++
				if kept == 0 {
					t.Error("the filter drops the helper's exec")
				}
			}
		case exit: // process_pid, process_tgid, ...
			if le.Uint32(ev[4:]) != child {
				continue
			}
			if kept != 0 {
				t.Errorf("the filter keeps the exit of the helper's thread %d", le.Uint32(ev[0:]))
			}
			if le.Uint32(ev[0:]) == child {
				exits++
			}
		}
	}
	t.Logf("helper %d: fork %d, exec %d, thread starts %d, exit of the process %d", child, forks, execs, threadForks, exits)
	if forks != 1 || execs != 1 || exits != 1 {
		t.Errorf("saw the helper's fork %d times, exec %d times, exit %d times: want each once", forks, execs, exits)
	}
	if threadForks < 5 {
		t.Errorf("saw %d of the helper's thread starts, want at least 5 (it starts one every 20 ms for 300 ms)", threadForks)
	}
}

// TestWatchExecsKeepsCommandLines: with the filter on its socket, the watcher still names a process that
// lived a fraction of a second, with the parent the test knows, from the fork it saw (no stat read).
func TestWatchExecsKeepsCommandLines(t *testing.T) {
	testenv.NeedRoot(t, "the proc connector needs CAP_NET_ADMIN")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	table := NewExecTable()
	w, err := WatchExecs(ctx, CmdlineReader("/proc"), table)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	sh := exec.Command("sh", "-c", "sleep 0.05; exit 0")
	if err := sh.Run(); err != nil {
		t.Fatal(err)
	}
	w.Sync()
	got, ok := table.Lookup(sh.Process.Pid)
	if !ok || got.Cmdline != "sh -c sleep 0.05; exit 0" || got.PPID != os.Getpid() {
		t.Errorf("watcher has %+v (found %v) for the shell, want its command line and parent %d", got, ok, os.Getpid())
	}
	if n := w.Lost(); n != 0 {
		t.Errorf("%d batches lost", n)
	}
}

// TestWatchExecsLateReadNamesByComm: an exec whose program ended before the watcher read its command line
// is recorded with none (so it is named by its comm) and counted, never named after its fork, whose
// record holds the parent's command line. The lateness is made certain: the reader refuses the test's own
// program as /proc does once it is gone.
func TestWatchExecsLateReadNamesByComm(t *testing.T) {
	testenv.NeedRoot(t, "the proc connector needs CAP_NET_ADMIN")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	table := NewExecTable()
	read := CmdlineReader("/proc")
	late := func(pid int, stat bool) (string, int, error) {
		cmd, ppid, err := read(pid, stat)
		if err == nil && strings.Contains(cmd, "tare-late-marker") {
			return "", 0, fmt.Errorf("reading /proc/%d/cmdline: %w", pid, fs.ErrNotExist)
		}
		return cmd, ppid, err
	}
	w, err := WatchExecs(ctx, late, table)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	// The program waits on its input until the watcher has handled its exec, so the reader sees the marker.
	sh := exec.Command("sh", "-c", "read x; : tare-late-marker")
	in, err := sh.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := sh.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for w.Unnamed() == 0 && time.Now().Before(deadline) {
		w.Sync()
		time.Sleep(10 * time.Millisecond)
	}
	_, _ = in.Write([]byte("\n"))
	if err := sh.Wait(); err != nil {
		t.Fatal(err)
	}
	w.Sync()
	got, ok := table.Lookup(sh.Process.Pid)
	if !ok || got.Cmdline != "" || got.PPID != os.Getpid() {
		t.Errorf("watcher has %+v (found %v) for the late program, want no command line and parent %d", got, ok, os.Getpid())
	}
	if w.Unnamed() < 1 {
		t.Errorf("the late read was not counted")
	}
}
