package kernel

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// Netlink and taskstats constants from linux/netlink.h, linux/genetlink.h and linux/taskstats.h.
const (
	nlmsgHdrLen  = 16
	genlHdrLen   = 4
	nlmsgError   = 2
	nlmsgDone    = 3
	nlmFRequest  = 1
	nlaTypeMask  = 0x3fff
	tsGenlVers   = 1
	tsCmdGet     = 1
	tsAttrPID    = 1
	tsAttrTGID   = 2
	tsAttrRegCPU = 3
	tsTypePID    = 1
	tsTypeTGID   = 2
	tsTypeStats  = 3
	tsTypeAggrP  = 4
	tsTypeAggrT  = 5
)

// Offsets inside struct taskstats (stable ABI; fields are only ever appended).
const (
	tsOffVersion   = 0
	tsOffExitCode  = 4
	tsOffVirtTotal = 72 // cpu_run_virtual_total: sum_exec_runtime in ns
	tsOffComm      = 80
	tsOffPID       = 128
	tsOffPPID      = 132
	tsOffBTime     = 136
	tsOffUTime     = 152
	tsOffSTime     = 160
	tsOffReadB     = 248
	tsOffWriteB    = 256
	tsOffTGID      = 368 // ac_tgid, taskstats version 12 and later
	tsMinLen       = 264
	tsVersionTGID  = 12 // the first version of struct taskstats with ac_tgid (Linux 5.19)
)

// TaskStats is the part of struct taskstats tare uses.
type TaskStats struct {
	Version    uint16
	ExitCode   uint32
	CPUNs      uint64 // cpu_run_virtual_total: scheduler runtime in nanoseconds
	Comm       string
	PID        int
	PPID       int
	TGID       int // 0 when the kernel is older than taskstats version 12 (Linux 5.19)
	BTime      uint32
	UTimeUs    uint64
	STimeUs    uint64
	ReadBytes  uint64
	WriteBytes uint64
}

// TaskstatsReply is one taskstats message: per-task statistics, and per-thread-group statistics when the
// message is about a whole thread group (a TGID query, or the exit of a multi-threaded process).
type TaskstatsReply struct {
	PID       int
	TGID      int
	PIDStats  *TaskStats
	TGIDStats *TaskStats
}

// parseTaskStats decodes struct taskstats.
func parseTaskStats(b []byte) (TaskStats, error) {
	if len(b) < tsMinLen {
		return TaskStats{}, fmt.Errorf("taskstats struct too short: %d bytes", len(b))
	}
	le := binary.LittleEndian
	s := TaskStats{
		Version:    le.Uint16(b[tsOffVersion:]),
		ExitCode:   le.Uint32(b[tsOffExitCode:]),
		CPUNs:      le.Uint64(b[tsOffVirtTotal:]),
		PID:        int(le.Uint32(b[tsOffPID:])),
		PPID:       int(le.Uint32(b[tsOffPPID:])),
		BTime:      le.Uint32(b[tsOffBTime:]),
		UTimeUs:    le.Uint64(b[tsOffUTime:]),
		STimeUs:    le.Uint64(b[tsOffSTime:]),
		ReadBytes:  le.Uint64(b[tsOffReadB:]),
		WriteBytes: le.Uint64(b[tsOffWriteB:]),
	}
	comm := b[tsOffComm : tsOffComm+32]
	if i := bytes.IndexByte(comm, 0); i >= 0 {
		comm = comm[:i]
	}
	s.Comm = string(comm)
	if s.Version >= tsVersionTGID && len(b) >= tsOffTGID+4 {
		s.TGID = int(le.Uint32(b[tsOffTGID:]))
	}
	return s, nil
}

// parseNetlinkMessages splits a datagram into netlink messages, calling fn with each type and payload.
func parseNetlinkMessages(b []byte, fn func(typ uint16, payload []byte) error) error {
	le := binary.LittleEndian
	for len(b) >= nlmsgHdrLen {
		n := int(le.Uint32(b))
		if n < nlmsgHdrLen || n > len(b) {
			return fmt.Errorf("netlink message length %d out of range (%d bytes left)", n, len(b))
		}
		if err := fn(le.Uint16(b[4:]), b[nlmsgHdrLen:n]); err != nil {
			return err
		}
		if align4(n) >= len(b) {
			break
		}
		b = b[align4(n):]
	}
	return nil
}

func align4(n int) int { return (n + 3) &^ 3 }

// walkAttrs calls fn for each netlink attribute in b.
func walkAttrs(b []byte, fn func(typ uint16, val []byte) error) error {
	le := binary.LittleEndian
	for len(b) >= 4 {
		n := int(le.Uint16(b))
		if n < 4 || n > len(b) {
			return fmt.Errorf("netlink attribute length %d out of range (%d bytes left)", n, len(b))
		}
		if err := fn(le.Uint16(b[2:])&nlaTypeMask, b[4:n]); err != nil {
			return err
		}
		if align4(n) >= len(b) {
			break
		}
		b = b[align4(n):]
	}
	return nil
}

// parseTaskstatsPayload decodes a TASKSTATS_CMD_NEW generic netlink payload (after the netlink header).
func parseTaskstatsPayload(p []byte) (TaskstatsReply, error) {
	var r TaskstatsReply
	if len(p) < genlHdrLen {
		return r, fmt.Errorf("taskstats message too short: %d bytes", len(p))
	}
	err := walkAttrs(p[genlHdrLen:], func(typ uint16, val []byte) error {
		if typ != tsTypeAggrP && typ != tsTypeAggrT {
			return nil
		}
		return walkAttrs(val, func(inner uint16, v []byte) error {
			switch inner {
			case tsTypePID:
				if len(v) >= 4 {
					r.PID = int(binary.LittleEndian.Uint32(v))
				}
			case tsTypeTGID:
				if len(v) >= 4 {
					r.TGID = int(binary.LittleEndian.Uint32(v))
				}
			case tsTypeStats:
				s, err := parseTaskStats(v)
				if err != nil {
					return err
				}
				if typ == tsTypeAggrP {
					r.PIDStats = &s
				} else {
					r.TGIDStats = &s
				}
			}
			return nil
		})
	})
	return r, err
}

// netlinkErrno returns the errno carried by an NLMSG_ERROR payload (0 for an ack).
func netlinkErrno(p []byte) int {
	if len(p) < 4 {
		return 0
	}
	return -int(int32(binary.LittleEndian.Uint32(p)))
}
