package kernel

import (
	"net"
	"os"
	"slices"
	"testing"
)

func TestParseSocketLink(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]uint64{"socket:[12345]": 12345, "socket:[1]": 1} {
		if got, ok := ParseSocketLink(in); !ok || got != want {
			t.Errorf("ParseSocketLink(%q) = %d, %v; want %d", in, got, ok, want)
		}
	}
	for _, bad := range []string{"", "socket:[]", "socket:[x1]", "pipe:[123]", "/dev/null", "anon_inode:[eventfd]", "socket:[12"} {
		if got, ok := ParseSocketLink(bad); ok {
			t.Errorf("ParseSocketLink(%q) = %d, true; want not a socket", bad, got)
		}
	}
}

// TestFindListener: a socket this test listens on is found as this process's (the kernel's own pid, not
// the socket table's), and a port nobody listens on is not found.
func TestFindListener(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	l, found, err := FindListener("/proc", port)
	if err != nil || !found || l.PID != os.Getpid() || l.Comm == "" {
		t.Errorf("FindListener(port %d) = %+v, %v, %v; want this process (PID %d)", port, l, found, err, os.Getpid())
	}
	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	freePort := free.Addr().(*net.TCPAddr).Port
	free.Close()
	if l, found, err := FindListener("/proc", freePort); err != nil || found {
		t.Errorf("FindListener(closed port %d) = %+v, %v, %v; want not found", freePort, l, found, err)
	}
}

// TestFindCmdline: this test process is found by its own command line, as os.Args holds it.
func TestFindCmdline(t *testing.T) {
	t.Parallel()
	pids, err := FindCmdline("/proc", SameArgs(os.Args))
	if err != nil || !slices.Contains(pids, os.Getpid()) {
		t.Errorf("FindCmdline(os.Args) = %v, %v; want it to hold PID %d", pids, err, os.Getpid())
	}
	if args, err := ReadCmdline("/proc", os.Getpid()); err != nil || !slices.Equal(args, os.Args) {
		t.Errorf("ReadCmdline(self) = %q, %v; want %q", args, err, os.Args)
	}
}
