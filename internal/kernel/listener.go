package kernel

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/prometheus/procfs"
)

// tcpListen is the state /proc/net/tcp gives a listening socket (TCP_LISTEN).
const tcpListen = 10

// Listener is a process holding a listening TCP socket.
type Listener struct {
	PID  int
	Comm string
}

// FindListener finds, under procRoot, the process listening on TCP port (IPv4 or IPv6): the sockets of
// /proc/net/tcp and tcp6 in the listening state on that port, then the process one of whose
// /proc/PID/fd links is one of those sockets. found is false when no socket listens on port or when
// its holder cannot be seen (another user's process, without root).
func FindListener(procRoot string, port int) (l Listener, found bool, err error) {
	fs, err := procfs.NewFS(procRoot)
	if err != nil {
		return Listener{}, false, fmt.Errorf("reading %s: %w", procRoot, err)
	}
	inodes := map[uint64]bool{}
	//nolint:staticcheck // /proc/net/tcp is enough to name a port's holder
	for _, read := range []func() (procfs.NetTCP, error){fs.NetTCP, fs.NetTCP6} {
		tcp, err := read()
		if err != nil {
			continue
		}
		for _, s := range tcp {
			if int(s.LocalPort) == port && s.St == tcpListen {
				inodes[s.Inode] = true
			}
		}
	}
	if len(inodes) == 0 {
		return Listener{}, false, nil
	}
	pids, err := ListPIDs(procRoot)
	if err != nil {
		return Listener{}, false, err
	}
	for _, pid := range pids {
		dir := filepath.Join(procRoot, strconv.Itoa(pid), "fd")
		fds, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			t, err := os.Readlink(filepath.Join(dir, fd.Name()))
			if err != nil {
				continue
			}
			if ino, ok := ParseSocketLink(t); ok && inodes[ino] {
				st, _ := ReadProcStat(procRoot, pid)
				return Listener{PID: pid, Comm: st.Comm}, true, nil
			}
		}
	}
	return Listener{}, false, nil
}

// ParseSocketLink reads the inode of a socket from the target of a /proc/PID/fd link ("socket:[12345]");
// ok is false for anything else (files, pipes, anonymous inodes).
func ParseSocketLink(target string) (inode uint64, ok bool) {
	const pre, post = "socket:[", "]"
	if len(target) <= len(pre)+len(post) || target[:len(pre)] != pre || target[len(target)-1:] != post {
		return 0, false
	}
	n, err := strconv.ParseUint(target[len(pre):len(target)-1], 10, 64)
	return n, err == nil
}
