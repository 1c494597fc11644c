package taskiter

import (
	"encoding/binary"
	"fmt"
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
}

// Bits of the record's flags field, as taskiter.bpf.c sets them.
const (
	flagKernel  = 1
	flagInexact = 2
)

// recordSize is sizeof(struct group) in taskiter.bpf.c.
const recordSize = 32

// parseGroups decodes the iterator's records (struct group, in this machine's byte order), appends them to
// dst, and returns the bytes of an incomplete record at the end.
func parseGroups(b []byte, dst []Group) (groups []Group, rest []byte, err error) {
	ne := binary.NativeEndian
	for len(b) >= recordSize {
		tgid, ppid := ne.Uint32(b[0:]), ne.Uint32(b[4:])
		if tgid == 0 || tgid > maxPID {
			return dst, nil, fmt.Errorf("task iterator record with thread group %d: %w", tgid, ErrMalformed)
		}
		flags := ne.Uint32(b[28:])
		dst = append(dst, Group{
			TGID:    int(tgid),
			PPID:    int(min(ppid, maxPID)),
			CPUNs:   ne.Uint64(b[8:]),
			StartNs: ne.Uint64(b[16:]),
			Threads: int(ne.Uint32(b[24:])),
			Kernel:  flags&flagKernel != 0,
			Inexact: flags&flagInexact != 0,
		})
		b = b[recordSize:]
	}
	return dst, b, nil
}

// maxPID is PID_MAX_LIMIT, the largest PID any kernel hands out (4 Mi on 64-bit).
const maxPID = 4 << 20
