package kernel

import (
	"encoding/binary"
	"fmt"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// The proc connector multicasts every process event of the node: forks of processes and of threads, execs,
// exits, and changes of uid, gid, session, comm and ptrace. The exec watcher wants only two of them, the
// exec of a process and the fork of a new process (not of a thread). Every other datagram woke tare for
// nothing: on a node starting processes at a steady rate, the exits alone were a third of the wake-ups, and
// a busy multi-threaded program adds a fork and an exit per thread. A classic BPF socket filter drops them
// in the kernel, before they are queued.
//
// Offsets into a datagram, from the start of the netlink header (linux/connector.h, linux/cn_proc.h):
// nlmsghdr (16 bytes), cn_msg (20), then proc_event's what (4), cpu (4), timestamp_ns (8) and event_data.
const (
	offWhat       = nlmsgHdrLen + cnMsgLen    // 36
	offEventData  = offWhat + procEventHdrLen // 52
	offChildPID   = offEventData + 8          // fork: child_pid, after parent_pid and parent_tgid
	offChildTGID  = offChildPID + 4           // fork: child_tgid
	offExecPID    = offEventData              // exec: process_pid
	offExecTGID   = offExecPID + 4            // exec: process_tgid
	filterAccept  = 0xffff                    // keep the whole datagram (they are under 100 bytes)
	filterDropAll = 0
)

// connectorFilter is the socket filter of the exec watcher: it keeps a datagram when its event is the exec
// of a process or the fork of a new process (child PID equal to the child's thread-group ID), and drops
// the rest. Classic BPF loads words in network byte order; the event is in host order, so the event types
// are compared as a load reads them (netOrder). The PID comparisons are equalities and do not care.
func connectorFilter() []bpf.Instruction {
	return []bpf.Instruction{
		bpf.LoadAbsolute{Off: offWhat, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: netOrder(procEventExec), SkipTrue: 5},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: netOrder(procEventFork), SkipFalse: 9},
		bpf.LoadAbsolute{Off: offChildPID, Size: 4},
		bpf.TAX{},
		bpf.LoadAbsolute{Off: offChildTGID, Size: 4},
		bpf.Jump{Skip: 3},
		// exec:
		bpf.LoadAbsolute{Off: offExecPID, Size: 4},
		bpf.TAX{},
		bpf.LoadAbsolute{Off: offExecTGID, Size: 4},
		// A = the thread-group ID, X = the PID: a process, not a thread.
		bpf.JumpIfX{Cond: bpf.JumpEqual, SkipFalse: 1},
		bpf.RetConstant{Val: filterAccept},
		bpf.RetConstant{Val: filterDropAll},
	}
}

// netOrder is the word a classic BPF load reads where the host stored v.
func netOrder(v uint32) uint32 {
	var b [4]byte
	binary.NativeEndian.PutUint32(b[:], v)
	return binary.BigEndian.Uint32(b[:])
}

// attachConnectorFilter installs connectorFilter on the socket fd.
func attachConnectorFilter(fd int) error {
	raw, err := bpf.Assemble(connectorFilter())
	if err != nil {
		return fmt.Errorf("assembling the proc connector filter: %w", err)
	}
	prog := make([]unix.SockFilter, len(raw))
	for i, ins := range raw {
		prog[i] = unix.SockFilter{Code: ins.Op, Jt: ins.Jt, Jf: ins.Jf, K: ins.K}
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if err := unix.SetsockoptSockFprog(fd, unix.SOL_SOCKET, unix.SO_ATTACH_FILTER, &fprog); err != nil {
		return fmt.Errorf("attaching the proc connector filter: %w", err)
	}
	return nil
}
