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
	stat    procStat
	cmdline string
	exe     string
	cgroup  string
	uid     int
	kernel  bool
}

// readIdentity reads stat, cmdline, exe, cgroup and owner of one process.
func readIdentity(pfs procfs.FS, procRoot string, pid int) (identity, error) {
	st, err := readProcStat(procRoot, pid)
	if err != nil {
		return identity{}, err
	}
	p, err := pfs.Proc(pid)
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
	if b, err := readBounded(filepath.Join(procRoot, strconv.Itoa(pid), "cgroup")); err == nil {
		if cgs, err := parseCgroupFile(b); err == nil {
			id.cgroup = pickCgroup(cgs)
		}
	}
	if fi, err := os.Stat(filepath.Join(procRoot, strconv.Itoa(pid))); err == nil {
		if s, ok := fi.Sys().(*syscall.Stat_t); ok {
			id.uid = int(s.Uid)
		}
	}
	return id, nil
}

// gone maps "no such file" and ESRCH to ErrGone so callers can tell an exited process from a real error.
func gone(pid int, err error) error {
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("process %d: %w", pid, ErrGone)
	}
	return fmt.Errorf("process %d: %w", pid, err)
}

// cmdlineReader returns the reader the exec watcher uses: redacted command line, comm and parent.
func cmdlineReader(pfs procfs.FS, procRoot string) func(pid int) (string, string, int, error) {
	return func(pid int) (string, string, int, error) {
		st, err := readProcStat(procRoot, pid)
		if err != nil {
			return "", "", 0, err
		}
		p, err := pfs.Proc(pid)
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

// procDetail is the slow-cadence part of a process sample.
type procDetail struct {
	rss, pss, private uint64
	readB, writeB     uint64
	threads           int
	statmRSS          uint64 // resident pages from statm, to tell whether smaps_rollup needs reading again
	smapsErr, ioErr   error
}

// readDetail reads the thread count (stat), io and memory. smaps_rollup walks the page tables and is the
// costliest read tare makes, so it is skipped when statm says the resident size has not changed since prev,
// unless refresh is set. Permission errors are returned per source so the sampler can tell the user which
// processes it could not see into.
func readDetail(pfs procfs.FS, procRoot string, pid int, prev *procDetail, refresh bool) procDetail {
	var d procDetail
	dir := filepath.Join(procRoot, strconv.Itoa(pid))
	if st, err := readProcStat(procRoot, pid); err == nil {
		d.threads = st.NumThreads
	}
	p, err := pfs.Proc(pid)
	if err != nil {
		d.smapsErr, d.ioErr = err, err
		return d
	}
	if b, err := readBounded(filepath.Join(dir, "statm")); err == nil {
		d.statmRSS = parseStatmRSS(b)
	}
	if prev != nil && !refresh && prev.smapsErr == nil && d.statmRSS != 0 && d.statmRSS == prev.statmRSS {
		d.rss, d.pss, d.private = prev.rss, prev.pss, prev.private
	} else if m, err := p.ProcSMapsRollup(); err == nil {
		d.rss, d.pss, d.private = m.Rss, m.Pss, m.PrivateClean+m.PrivateDirty
	} else {
		d.smapsErr = err
	}
	if b, err := readBounded(filepath.Join(dir, "io")); err != nil {
		d.ioErr = err
	} else if d.readB, d.writeB, err = parseIO(b); err != nil {
		d.ioErr = err
	}
	return d
}

// parseStatmRSS returns the resident pages, field 2 of /proc/PID/statm.
func parseStatmRSS(b []byte) uint64 {
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	v, _ := strconv.ParseUint(f[1], 10, 64)
	return v
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
