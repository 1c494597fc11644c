package taskiter

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/bits"
	"time"

	"github.com/tare-dev/tare/internal/kernel"
)

// Group is one thread group (process) as the task iterator saw it.
type Group struct {
	TGID    int
	PPID    int    // the thread group of the real parent
	CPUNs   uint64 // CPU time of all its threads, live and exited (what CLOCK_PROCESS_CPUTIME_ID reports)
	StartNs uint64 // start time in ns since boot, suspend included (/proc/PID/stat's starttime × 10⁷)
	Threads int    // live threads (a zombie leader counts)
	Kernel  bool   // a kernel thread
	// Inexact reports that a thread exited during the walk: CPUNs may miss that thread's time (never count
	// it twice), and the next read reports the group again with it.
	Inexact bool
	// Desc describes the group's leader, as the pass read it (Desc.Valid; not for the groups user space
	// completes after a PassBPFIter pass, whose threads did not add up).
	Desc Description
}

// Description is what a pass reads of a group's leader beside its CPU time: what /proc/PID/stat, the owner
// of /proc/PID and /proc/PID/io say, for a process tare sees for the first time (ProcStat).
type Description struct {
	Valid bool
	Comm  string // the leader's name, as /proc/PID/stat shows it between parentheses
	State byte   // as /proc/PID/stat shows it: R, S, D, T, t, X, Z, P or I
	EUID  uint32 // the effective UID of its credentials: the owner of /proc/PID
	// CUTimeNs and CSTimeNs are the CPU time of the children it reaped (signal->cutime and cstime), in ns:
	// /proc/PID/stat shows each cut to clock ticks.
	CUTimeNs, CSTimeNs uint64
	// HasIO says ReadBytes and WriteBytes are what /proc/PID/io says: the group has one live thread, and
	// the kernel keeps I/O accounting (CONFIG_TASK_IO_ACCOUNTING).
	HasIO                 bool
	ReadBytes, WriteBytes uint64
	// CgroupKey names the leader's cgroups: its cgroup IDs on the unified hierarchy and of its cpu and
	// memory controllers (never reused while the machine runs), for kernel.IdentityOf to read
	// /proc/PID/cgroup once for the processes of one cgroup (kernel.CgroupPaths).
	CgroupKey kernel.CgroupIDs
}

// Bits of the record's flags field, as record.h defines them.
const (
	flagKernel    = 1
	flagInexact   = 2
	flagDescribed = 4
	flagIO        = 8
)

// groupSize is sizeof(struct group) and recordSize sizeof(struct record) in record.h: a record is its
// group, then the description of its leader (struct desc).
const (
	groupSize  = 32
	recordSize = groupSize + 88
)

// parseGroups decodes the iterator's records (struct record, in this machine's byte order), appends them
// to dst, and returns the bytes of an incomplete record at the end.
func parseGroups(b []byte, dst []Group) (groups []Group, rest []byte, err error) {
	for len(b) >= recordSize {
		g, err := parseGroup(b[:groupSize])
		if err != nil {
			return dst, nil, err
		}
		ne, flags := binary.NativeEndian, binary.NativeEndian.Uint32(b[28:])
		if flags&flagDescribed != 0 {
			d := &g.Desc
			d.Valid = true
			comm := b[groupSize : groupSize+16]
			if n := bytes.IndexByte(comm, 0); n >= 0 {
				comm = comm[:n]
			}
			d.Comm = string(comm)
			d.State = stateLetter(ne.Uint32(b[groupSize+16:]), ne.Uint32(b[groupSize+20:]))
			d.EUID = ne.Uint32(b[groupSize+24:])
			d.CUTimeNs, d.CSTimeNs = ne.Uint64(b[groupSize+32:]), ne.Uint64(b[groupSize+40:])
			if flags&flagIO != 0 {
				d.HasIO = true
				d.ReadBytes, d.WriteBytes = ne.Uint64(b[groupSize+48:]), ne.Uint64(b[groupSize+56:])
			}
			for i := range d.CgroupKey {
				d.CgroupKey[i] = ne.Uint64(b[groupSize+64+8*i:])
			}
		}
		dst = append(dst, g)
		b = b[recordSize:]
	}
	return dst, b, nil
}

// parseGroup decodes a struct group (record.h), without a description.
func parseGroup(b []byte) (Group, error) {
	ne := binary.NativeEndian
	tgid, ppid := ne.Uint32(b[0:]), ne.Uint32(b[4:])
	if tgid == 0 || tgid > maxPID {
		return Group{}, fmt.Errorf("task iterator record with thread group %d: %w", tgid, ErrMalformed)
	}
	flags := ne.Uint32(b[28:])
	return Group{
		TGID:    int(tgid),
		PPID:    int(min(ppid, maxPID)),
		CPUNs:   ne.Uint64(b[8:]),
		StartNs: ne.Uint64(b[16:]),
		Threads: int(ne.Uint32(b[24:])),
		Kernel:  flags&flagKernel != 0,
		Inexact: flags&flagInexact != 0,
	}, nil
}

// Task states, from include/linux/sched.h: the bits of a task's state and exit state that /proc reports.
const (
	taskReport      = 0x7f   // TASK_REPORT: running (0) to parked
	taskReportIdle  = 0x80   // TASK_REPORT_IDLE
	taskIdle        = 0x402  // TASK_IDLE: TASK_UNINTERRUPTIBLE | TASK_NOLOAD
	taskRTLockWait  = 0x1000 // TASK_RTLOCK_WAIT (Linux 5.15)
	taskFrozen      = 0x8000 // TASK_FROZEN (Linux 6.1)
	taskUninterrupt = 0x2
)

// stateLetter is the letter /proc/PID/stat shows for a task of that state and exit state: the kernel's
// __task_state_index (an idle kernel thread I, a frozen task or one waiting on an RT lock D) and
// task_state_array. Before Linux 5.15 and 6.1 the two bits of those states were unused or meant nothing
// /proc looks at.
func stateLetter(state, exitState uint32) byte {
	s := (state | exitState) & taskReport
	if state&taskIdle == taskIdle {
		s = taskReportIdle
	}
	if state&(taskRTLockWait|taskFrozen) != 0 {
		s = taskUninterrupt
	}
	return "RSDTtXZPI"[bits.Len32(s)]
}

// maxPID is PID_MAX_LIMIT, the largest PID any kernel hands out (4 Mi on 64-bit).
const maxPID = 4 << 20

// ProcStat is what /proc/PID/stat says of the group, from the pass's description; false without one, and
// for a kernel thread, whose name there is the kernel's fuller one (a workqueue worker's with the queue it
// serves, a name longer than the task's 15 characters whole): then read the file. UTime holds the group's
// CPU time in clock ticks and STime 0: the kernel's split of the two, from tick sampling, is not in the
// task, and tare uses only their sum.
func (g Group) ProcStat() (kernel.ProcStat, bool) {
	d := g.Desc
	if !d.Valid || g.Kernel {
		return kernel.ProcStat{}, false
	}
	const tick = uint64(time.Second / kernel.UserHZ)
	st := kernel.ProcStat{
		Comm:       d.Comm,
		State:      d.State,
		PPID:       g.PPID,
		UTime:      g.CPUNs / tick,
		CUTime:     int64(d.CUTimeNs / tick),
		CSTime:     int64(d.CSTimeNs / tick),
		NumThreads: g.Threads,
		Starttime:  g.StartNs / tick,
	}
	return st, true
}
