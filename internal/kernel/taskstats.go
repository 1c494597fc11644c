package kernel

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"

	"github.com/mdlayher/genetlink"
	"golang.org/x/sys/unix"
)

// taskstatsFamily resolves the generic netlink family ID of TASKSTATS.
func taskstatsFamily() (uint16, error) {
	c, err := genetlink.Dial(nil)
	if err != nil {
		return 0, fmt.Errorf("opening generic netlink: %w", err)
	}
	defer func() { _ = c.Close() }()
	f, err := c.GetFamily("TASKSTATS")
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			// Before Linux 5.19 the family is registered in the initial network namespace only
			// ("kernel: make taskstats available from all net namespaces"): both causes look the same.
			return 0, fmt.Errorf("taskstats generic netlink family: %w (kernel built without CONFIG_TASKSTATS or, before Linux 5.19, tare outside the host's network namespace: give it hostNetwork)", ErrNotSupported)
		}
		return 0, fmt.Errorf("looking up the taskstats netlink family: %w", err)
	}
	return f.ID, nil
}

// netlinkSocket is a raw generic netlink socket with preallocated buffers: the hot path of sampling does
// one sendto and one recvfrom per process and allocates nothing.
type netlinkSocket struct {
	fd     int
	family uint16
	seq    uint32
	req    []byte
	buf    []byte
}

func openNetlink(family uint16, rcvbuf int) (*netlinkSocket, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_GENERIC)
	if err != nil {
		return nil, fmt.Errorf("opening a netlink socket: %w", err)
	}
	if rcvbuf > 0 {
		// SO_RCVBUFFORCE needs CAP_NET_ADMIN, which taskstats needs anyway; fall back to the capped size.
		if unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, rcvbuf) != nil {
			_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, rcvbuf)
		}
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("binding a netlink socket: %w", err)
	}
	return &netlinkSocket{fd: fd, family: family, req: make([]byte, 64), buf: make([]byte, 64*1024)}, nil
}

func (s *netlinkSocket) Close() error { return unix.Close(s.fd) }

// send writes one TASKSTATS_CMD_GET request carrying one attribute.
func (s *netlinkSocket) send(attr uint16, val []byte) error {
	le := binary.LittleEndian
	attrLen := 4 + len(val)
	n := nlmsgHdrLen + genlHdrLen + align4(attrLen)
	b := s.req[:n]
	clear(b)
	s.seq++
	le.PutUint32(b[0:], uint32(n))
	le.PutUint16(b[4:], s.family)
	le.PutUint16(b[6:], nlmFRequest)
	le.PutUint32(b[8:], s.seq)
	b[16] = tsCmdGet
	b[17] = tsGenlVers
	le.PutUint16(b[20:], uint16(attrLen))
	le.PutUint16(b[22:], attr)
	copy(b[24:], val)
	return rawSendto(s.fd, b, &unix.RawSockaddrNetlink{Family: unix.AF_NETLINK})
}

// TaskstatsClient queries per-thread-group statistics. It is not safe for concurrent use.
type TaskstatsClient struct {
	sock *netlinkSocket
	val  [4]byte
}

// OpenTaskstats opens a taskstats query client and checks that this process may use it (CAP_NET_ADMIN).
func OpenTaskstats() (*TaskstatsClient, error) {
	fam, err := taskstatsFamily()
	if err != nil {
		return nil, err
	}
	sock, err := openNetlink(fam, 0)
	if err != nil {
		return nil, err
	}
	c := &TaskstatsClient{sock: sock}
	self, err := c.TGID(os.Getpid())
	if err == nil {
		err = checkCPUFilled(self)
	}
	if err != nil {
		_ = sock.Close()
		return nil, err
	}
	return c, nil
}

// Close releases the socket.
func (c *TaskstatsClient) Close() error { return c.sock.Close() }

// TGID returns the statistics of a whole thread group: CPU summed over live and exited threads.
func (c *TaskstatsClient) TGID(pid int) (TaskStats, error) {
	binary.LittleEndian.PutUint32(c.val[:], uint32(pid))
	if err := c.sock.send(tsAttrTGID, c.val[:]); err != nil {
		return TaskStats{}, fmt.Errorf("taskstats query for %d: %w", pid, err)
	}
	for {
		// The kernel answers while handling sendto, so the reply is queued already; block (telling the
		// scheduler) only if it is not.
		n, err := rawRecv(c.sock.fd, c.sock.buf, unix.MSG_DONTWAIT)
		if errors.Is(err, unix.EAGAIN) {
			n, _, err = unix.Recvfrom(c.sock.fd, c.sock.buf, 0)
		}
		if err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return TaskStats{}, fmt.Errorf("taskstats reply for %d: %w", pid, err)
		}
		var out TaskStats
		found := false
		perr := parseNetlinkMessages(c.sock.buf[:n], func(typ uint16, p []byte) error {
			if typ == nlmsgError {
				if e := netlinkErrno(p); e != 0 {
					return errnoError(pid, syscall.Errno(e))
				}
				return nil
			}
			r, err := parseTaskstatsPayload(p)
			if err != nil {
				return err
			}
			if r.TGIDStats != nil {
				out, found = *r.TGIDStats, true
			}
			return nil
		})
		if perr != nil {
			return TaskStats{}, perr
		}
		if found {
			return out, nil
		}
	}
}

func errnoError(pid int, e syscall.Errno) error {
	switch e {
	case unix.ESRCH:
		return fmt.Errorf("taskstats for %d: %w", pid, ErrGone)
	case unix.EPERM, unix.EACCES:
		return fmt.Errorf("taskstats needs CAP_NET_ADMIN (run tare as root): %w", ErrPermission)
	}
	return fmt.Errorf("taskstats for %d: %w", pid, e)
}

// ExitRecord is a process (thread group) that ended, as told by a taskstats exit notification.
type ExitRecord struct {
	PID   int
	PPID  int
	Comm  string
	CPUNs uint64
	// MaybeThread is set when the kernel did not say whether this was a process's end: a lone per-task
	// record from a kernel whose struct taskstats has no ac_tgid (version 11 or earlier, Linux before
	// 5.19). Such a record is the end of a single-threaded process, of a thread group's leader, or of
	// one thread of a process that runs on; the caller tells them apart (the sampler by the process starts
	// its exec source saw: internal/sample/exits.go).
	MaybeThread bool
}

// ExitListener receives taskstats exit notifications for every CPU. Drain reads what has queued without
// blocking, so the sampler sees every exit that happened before it listed /proc.
type ExitListener struct {
	sock    *netlinkSocket
	Dropped int // notifications lost to a full socket buffer (ENOBUFS)
	// Unsure counts the records returned with MaybeThread set: ends the kernel did not say were a
	// process's (taskstats before version 12).
	Unsure int
	// readAs, when not 0, is the taskstats version records are read as (ReadAsVersion).
	readAs uint16
}

// ListenExits registers for exit notifications on all possible CPUs.
func ListenExits(sysRoot string) (*ExitListener, error) {
	fam, err := taskstatsFamily()
	if err != nil {
		return nil, err
	}
	sock, err := openNetlink(fam, 16<<20)
	if err != nil {
		return nil, err
	}
	mask, err := os.ReadFile(sysRoot + "/devices/system/cpu/possible")
	if err != nil {
		_ = sock.Close()
		return nil, fmt.Errorf("reading possible CPUs: %w", err)
	}
	val := append([]byte(strings.TrimSpace(string(mask))), 0)
	if err := sock.send(tsAttrRegCPU, val); err != nil {
		_ = sock.Close()
		if errors.Is(err, unix.EPERM) {
			return nil, fmt.Errorf("taskstats exit notifications need CAP_NET_ADMIN: %w", ErrPermission)
		}
		return nil, fmt.Errorf("registering for taskstats exit notifications: %w", err)
	}
	return &ExitListener{sock: sock}, nil
}

// Close deregisters by closing the socket.
func (l *ExitListener) Close() error { return l.sock.Close() }

// Drain returns the process exits queued since the last call. Exits of single threads of a process that
// lives on are skipped where the kernel says so (taskstats version 12, Linux 5.19): their CPU stays in the
// thread group's counters. Before that, such an exit comes with MaybeThread set.
func (l *ExitListener) Drain() ([]ExitRecord, error) {
	var out []ExitRecord
	for {
		n, err := rawRecv(l.sock.fd, l.sock.buf, unix.MSG_DONTWAIT)
		if err != nil {
			switch {
			case errors.Is(err, unix.EAGAIN):
				return out, nil
			case errors.Is(err, unix.EINTR):
				continue
			case errors.Is(err, unix.ENOBUFS):
				l.Dropped++
				continue
			}
			return out, fmt.Errorf("reading taskstats exit notifications: %w", err)
		}
		err = parseNetlinkMessages(l.sock.buf[:n], func(typ uint16, p []byte) error {
			if typ == nlmsgError || typ == nlmsgDone {
				return nil
			}
			r, err := parseTaskstatsPayload(p)
			if err != nil {
				return err
			}
			readAsVersion(&r, l.readAs)
			if rec, ok := exitFromReply(r); ok {
				if rec.MaybeThread {
					l.Unsure++
				}
				out = append(out, rec)
			}
			return nil
		})
		if err != nil {
			return out, err
		}
	}
}

// exitFromReply turns one exit notification into a process exit, or reports false for the exit of one
// thread of a process that keeps running.
//
// What the kernel sends (kernel/taskstats.c, taskstats_exit, read in 5.15's source; the records of 6.18
// captured under testdata/ show the same): for every task that exits, one TASKSTATS_TYPE_AGGR_PID (the
// task's own statistics, ac_pid its thread ID); and, when the exit ends a thread group that ever had
// another thread (signal->stats allocated), also a TASKSTATS_TYPE_AGGR_TGID with the group's total. The
// exit of a thread while others run sends the AGGR_PID alone, as does the end of a process that never had
// a second thread. Only ac_tgid (struct taskstats version 12, Linux 5.19) tells those two apart in the
// record itself: before it, ac_ppid of a thread is its process's parent (CLONE_THREAD copies real_parent)
// and ac_btime its own start, so nothing in the record does. Such a record is returned with MaybeThread
// set.
func exitFromReply(r TaskstatsReply) (ExitRecord, bool) {
	if r.PIDStats == nil {
		return ExitRecord{}, false
	}
	ps := r.PIDStats
	if r.TGIDStats != nil { // last thread of a multi-threaded process: the group total
		return ExitRecord{PID: r.TGID, PPID: ps.PPID, Comm: ps.Comm, CPUNs: r.TGIDStats.CPUNs}, true
	}
	if ps.Version < tsVersionTGID || ps.TGID == 0 {
		return ExitRecord{PID: ps.PID, PPID: ps.PPID, Comm: ps.Comm, CPUNs: ps.CPUNs, MaybeThread: true}, true
	}
	if ps.TGID != ps.PID {
		return ExitRecord{}, false
	}
	return ExitRecord{PID: ps.PID, PPID: ps.PPID, Comm: ps.Comm, CPUNs: ps.CPUNs}, true
}
