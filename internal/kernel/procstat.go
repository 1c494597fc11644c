package kernel

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// UserHZ is the unit of /proc/PID/stat times (sysconf(_SC_CLK_TCK), 100 on every Linux ABI).
const UserHZ = 100

// ProcStat is the part of /proc/PID/stat tare uses. procfs parses the file with fmt.Sscan, which costs
// more than the read itself; tare reads stat for every new process and, without root, every sample.
type ProcStat struct {
	Comm       string
	State      byte // R, S, D, Z (zombie: ended, not yet reaped), ...
	PPID       int
	Flags      uint64
	UTime      uint64 // clock ticks
	STime      uint64
	CUTime     int64
	CSTime     int64
	NumThreads int
	Starttime  uint64 // clock ticks since boot
}

// ParseProcStat decodes /proc/PID/stat. The comm field is found between the first '(' and the last ')'
// because it may hold spaces and parentheses.
func ParseProcStat(b []byte) (ProcStat, error) {
	open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || end < open {
		return ProcStat{}, fmt.Errorf("stat: no (comm)")
	}
	// The fields after comm, split at ASCII white space as strings.Fields does, without copying the line:
	// the baseline parses every process's stat, 3 µs each with a copy and a slice of 50 strings.
	var f [20][]byte
	n := 0
	for rest := b[end+1:]; ; {
		i := 0
		for i < len(rest) && asciiSpace(rest[i]) {
			i++
		}
		if rest = rest[i:]; len(rest) == 0 {
			break
		}
		j := 0
		for j < len(rest) && !asciiSpace(rest[j]) {
			j++
		}
		if n < len(f) {
			f[n] = rest[:j]
		}
		n, rest = n+1, rest[j:]
	}
	if n < len(f) {
		return ProcStat{}, fmt.Errorf("stat: %d fields after comm, want at least 20", n)
	}
	var s ProcStat
	s.Comm = string(b[open+1 : end])
	if len(f[0]) == 1 {
		s.State = f[0][0]
	}
	var errs [8]error
	s.PPID, errs[0] = strconv.Atoi(string(f[1]))
	s.Flags, errs[1] = strconv.ParseUint(string(f[6]), 10, 64)
	s.UTime, errs[2] = strconv.ParseUint(string(f[11]), 10, 64)
	s.STime, errs[3] = strconv.ParseUint(string(f[12]), 10, 64)
	s.CUTime, errs[4] = strconv.ParseInt(string(f[13]), 10, 64)
	s.CSTime, errs[5] = strconv.ParseInt(string(f[14]), 10, 64)
	s.NumThreads, errs[6] = strconv.Atoi(string(f[17]))
	s.Starttime, errs[7] = strconv.ParseUint(string(f[19]), 10, 64)
	for _, err := range errs {
		if err != nil {
			return ProcStat{}, fmt.Errorf("stat: %w", err)
		}
	}
	return s, nil
}

// asciiSpace is the white space strings.Fields splits at, in ASCII (the kernel prints no other).
func asciiSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

// ReadProcStat reads and parses <procRoot>/PID/stat. A process that has exited gives an error matching
// ErrGone.
func ReadProcStat(procRoot string, pid int) (ProcStat, error) {
	b, err := readRecord(filepath.Join(procRoot, strconv.Itoa(pid), "stat"))
	if err != nil {
		return ProcStat{}, gone(pid, err)
	}
	s, err := ParseProcStat(b)
	if err != nil {
		return ProcStat{}, fmt.Errorf("process %d: %w", pid, err)
	}
	return s, nil
}

// KernelThread says whether the process is a kernel thread (PF_KTHREAD).
func (s ProcStat) KernelThread() bool { return s.Flags&pfKthread != 0 }

// Quiet reports a process none of whose own threads can hold its memory map's lock (mmap_lock), or wait
// for it, for as long as it does not run: one thread, asleep interruptibly (S). A thread in a page fault
// or an mmap that waits sleeps uninterruptibly or killably (D), and a process's only thread cannot queue
// an mmap behind a fault of its own. So until it runs again, a read of its cmdline or smaps_rollup can wait
// only for a brief writer from outside (khugepaged, uprobes), and is read without the deadline's goroutine
// and timer (BlockingReader's readQuiet): about half the CPU of such a read, paid at the baseline and at the
// end of a run for every idle process of the node.
func (s ProcStat) Quiet() bool { return s.NumThreads == 1 && s.State == 'S' }

// Ended says whether the process has ended: dead, or a zombie whose other threads have ended too. The
// stat shows the thread-group leader, a zombie as soon as its own thread exits while the others may still
// be ending, and the process's files, listening sockets too, close only with the last of them; the thread
// count keeps the leader until it is reaped, so a zombie counting more than itself is still ending.
func (s ProcStat) Ended() bool { return s.State == 'X' || s.State == 'Z' && s.NumThreads <= 1 }

// OwnTimeNs is utime+stime in nanoseconds.
func (s ProcStat) OwnTimeNs() uint64 {
	return (s.UTime + s.STime) * (1e9 / UserHZ)
}

// ChildTimeNs is cutime+cstime in nanoseconds.
func (s ProcStat) ChildTimeNs() uint64 {
	return uint64(s.CUTime+s.CSTime) * (1e9 / UserHZ)
}

// BootTicks is the time since boot in USER_HZ ticks, the unit of ProcStat.Starttime; 0 if the clock cannot
// be read.
func BootTicks() uint64 {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts) != nil {
		return 0
	}
	return uint64(ts.Nano()) / (1e9 / UserHZ)
}
