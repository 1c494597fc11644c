package lab

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/prometheus/procfs"
)

// portOwner names the process listening on a TCP port, as " by PID N (comm)", or "" if it cannot tell.
func portOwner(port int) string {
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		return ""
	}
	inodes := map[uint64]bool{}
	//nolint:staticcheck // /proc/net/tcp is enough to name a port's holder in an error message
	for _, read := range []func() (procfs.NetTCP, error){fs.NetTCP, fs.NetTCP6} {
		tcp, err := read()
		if err != nil {
			continue
		}
		for _, l := range tcp {
			if int(l.LocalPort) == port && l.St == 10 { // TCP_LISTEN
				inodes[l.Inode] = true
			}
		}
	}
	if len(inodes) == 0 {
		return ""
	}
	procs, err := fs.AllProcs()
	if err != nil {
		return ""
	}
	for _, p := range procs {
		fds, err := os.ReadDir(filepath.Join("/proc", strconv.Itoa(p.PID), "fd"))
		if err != nil {
			continue
		}
		for _, fd := range fds {
			t, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(p.PID), "fd", fd.Name()))
			if err != nil {
				continue
			}
			var ino uint64
			if _, err := fmt.Sscanf(t, "socket:[%d]", &ino); err == nil && inodes[ino] {
				comm, _ := p.Comm()
				return fmt.Sprintf(" by PID %d (%s)", p.PID, comm)
			}
		}
	}
	return " (by a process tare cannot see; try: ss -ltnp)"
}

func killPID(pid int) error { return syscall.Kill(pid, syscall.SIGKILL) }
