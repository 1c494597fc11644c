package sample

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/prometheus/procfs"

	"github.com/tare-dev/tare/internal/redact"
)

const pfKthread = 0x00200000 // PF_KTHREAD in /proc/PID/stat flags

// identity is what tare reads once when it first sees a process.
type identity struct {
	stat    procfs.ProcStat
	cmdline string
	exe     string
	cgroup  string
	uid     int
	kernel  bool
}

// readIdentity reads stat, cmdline, exe, cgroup and owner of one process.
func readIdentity(pfs procfs.FS, procRoot string, pid int) (identity, error) {
	p, err := pfs.Proc(pid)
	if err != nil {
		return identity{}, gone(pid, err)
	}
	st, err := p.Stat()
	if err != nil {
		return identity{}, gone(pid, err)
	}
	id := identity{stat: st, kernel: st.Flags&pfKthread != 0}
	if args, err := p.CmdLine(); err == nil && len(args) > 0 {
		id.cmdline = redact.Join(args)
	}
	if id.cmdline == "" {
		id.cmdline = "[" + st.Comm + "]"
	}
	if exe, err := p.Executable(); err == nil {
		id.exe = exe
	}
	if cgs, err := p.Cgroups(); err == nil {
		id.cgroup = pickCgroup(cgs)
	}
	if fi, err := os.Stat(filepath.Join(procRoot, strconv.Itoa(pid))); err == nil {
		if s, ok := fi.Sys().(*syscall.Stat_t); ok {
			id.uid = int(s.Uid)
		}
	}
	return id, nil
}

// pickCgroup chooses the cgroup path that identifies a process's pod: the unified (v2) path, or the v1
// path of the cpu controller, preferring any path that names kubepods.
func pickCgroup(cgs []procfs.Cgroup) string {
	best := ""
	for _, c := range cgs {
		if strings.Contains(c.Path, "kubepods") {
			return c.Path
		}
		if c.HierarchyID == 0 && best == "" {
			best = c.Path
		}
		for _, ctl := range c.Controllers {
			if ctl == "cpu" || ctl == "cpuacct" {
				best = c.Path
			}
		}
	}
	return best
}

// gone maps "no such file" and ESRCH to ErrGone so callers can tell an exited process from a real error.
func gone(pid int, err error) error {
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("process %d: %w", pid, ErrGone)
	}
	return fmt.Errorf("process %d: %w", pid, err)
}

// cmdlineReader returns the reader the exec watcher uses: redacted command line, comm and parent.
func cmdlineReader(pfs procfs.FS) func(pid int) (string, string, int, error) {
	return func(pid int) (string, string, int, error) {
		p, err := pfs.Proc(pid)
		if err != nil {
			return "", "", 0, err
		}
		st, err := p.Stat()
		if err != nil {
			return "", "", 0, err
		}
		args, err := p.CmdLine()
		if err != nil {
			return "", "", 0, err
		}
		cmd := redact.Join(args)
		if cmd == "" {
			cmd = "[" + st.Comm + "]"
		}
		return cmd, st.Comm, st.PPID, nil
	}
}

// detail is the slow-cadence part of a process sample.
type detail struct {
	rss, pss, private uint64
	readB, writeB     uint64
	threads           int
	smapsErr, ioErr   error
}

// readDetail reads smaps_rollup, io and the thread count. Permission errors are returned per source so the
// sampler can tell the user which processes it could not see into.
func readDetail(pfs procfs.FS, pid int, kernel bool) detail {
	var d detail
	p, err := pfs.Proc(pid)
	if err != nil {
		d.smapsErr, d.ioErr = err, err
		return d
	}
	if st, err := p.Stat(); err == nil {
		d.threads = st.NumThreads
	}
	if !kernel {
		if m, err := p.ProcSMapsRollup(); err == nil {
			d.rss, d.pss, d.private = m.Rss, m.Pss, m.PrivateClean+m.PrivateDirty
		} else {
			d.smapsErr = err
		}
	}
	if io, err := p.IO(); err == nil {
		d.readB, d.writeB = io.ReadBytes, io.WriteBytes
	} else {
		d.ioErr = err
	}
	return d
}

// schedstatCPU sums the scheduler runtime (ns) of every thread of pid: the fallback when taskstats is not
// available. CPU of threads that exited since the previous sample is not included.
func schedstatCPU(pfs procfs.FS, pid int) (uint64, error) {
	threads, err := pfs.AllThreads(pid)
	if err != nil {
		return 0, gone(pid, err)
	}
	var total uint64
	for _, t := range threads {
		s, err := t.Schedstat()
		if err != nil {
			continue // thread exited between listing and reading
		}
		total += s.RunningNanoseconds
	}
	return total, nil
}
