package kernel

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// staleRecord is the age beyond which the exec watcher does not trust a table entry to be the same process.
const staleRecord = 10 * time.Second

// Proc connector constants from linux/connector.h and linux/cn_proc.h.
const (
	cnIdxProc       = 1
	cnValProc       = 1
	procCnListen    = 1
	procEventFork   = 0x1
	procEventExec   = 0x2
	cnMsgLen        = 20
	procEventHdrLen = 16
)

// ProcEvent is one fork or exec notification from the proc connector.
type ProcEvent struct {
	What      uint32
	PID, TGID int // the process that exec'd, or the child of a fork
	ParentPID int // fork only: the parent's TGID
}

// parseProcEvent decodes a proc connector message payload (after the netlink header).
func parseProcEvent(p []byte) (ProcEvent, bool) {
	if len(p) < cnMsgLen+procEventHdrLen+8 {
		return ProcEvent{}, false
	}
	le := binary.LittleEndian
	ev := p[cnMsgLen:]
	what := le.Uint32(ev)
	d := ev[procEventHdrLen:]
	switch what {
	case procEventExec:
		return ProcEvent{What: what, PID: int(le.Uint32(d)), TGID: int(le.Uint32(d[4:]))}, true
	case procEventFork:
		if len(d) < 16 {
			return ProcEvent{}, false
		}
		return ProcEvent{What: what, ParentPID: int(le.Uint32(d[4:])), PID: int(le.Uint32(d[8:])), TGID: int(le.Uint32(d[12:]))}, true
	}
	return ProcEvent{}, false
}

// ExecWatcher records in an ExecTable the redacted command line of every process that forks or execs, read
// from /proc the moment the proc connector announces the exec, so that processes living a few milliseconds
// keep their command line after they exit.
//
// The socket is non-blocking and waited on through Go's network poller, so no thread sits in a blocking
// system call between events: such a thread keeps the runtime's monitor thread (sysmon) polling every few
// milliseconds instead of sleeping, which cost tare more CPU on an idle node than reading it.
type ExecWatcher struct {
	fd     int
	file   *os.File // fd, registered with the network poller
	closed bool     // guarded by sockMu: fd is closed
	reader ExecReadFunc
	sockMu sync.Mutex // held while reading the socket, so Sync and the loop never race
	buf    []byte
	table  *ExecTable
	mu     sync.Mutex // guards lost, unnamed and starts
	lost   int
	// unnamed counts execs whose command line could not be read: the program had ended.
	unnamed int
	starts  int // processes forked since the watcher started
	done    chan struct{}
}

// WatchExecs subscribes to proc connector events (needs CAP_NET_ADMIN) and records them in table until ctx
// ends.
func WatchExecs(ctx context.Context, reader ExecReadFunc, table *ExecTable) (*ExecWatcher, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, unix.NETLINK_CONNECTOR)
	if err != nil {
		return nil, fmt.Errorf("opening the proc connector: %w", err)
	}
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 8<<20)
	// Without the filter every event still reaches handle, which skips what it does not want: the filter
	// only spares the wake-ups, so a kernel refusing it costs CPU, not correctness.
	_ = attachConnectorFilter(fd)
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK, Groups: cnIdxProc}); err != nil {
		unix.Close(fd)
		if errors.Is(err, unix.EPERM) {
			return nil, fmt.Errorf("proc connector needs CAP_NET_ADMIN: %w", ErrPermission)
		}
		return nil, fmt.Errorf("binding the proc connector: %w", err)
	}
	if err := unix.Sendto(fd, listenMessage(), 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		unix.Close(fd)
		if errors.Is(err, unix.EPERM) {
			return nil, fmt.Errorf("proc connector needs CAP_NET_ADMIN: %w", ErrPermission)
		}
		return nil, fmt.Errorf("subscribing to proc events: %w", err)
	}
	w := &ExecWatcher{fd: fd, file: os.NewFile(uintptr(fd), "proc connector"), reader: reader, table: table,
		done: make(chan struct{}), buf: make([]byte, 64*1024)}
	rc, err := w.file.SyscallConn()
	if err != nil {
		w.file.Close()
		return nil, fmt.Errorf("waiting on the proc connector: %w", err)
	}
	stop := context.AfterFunc(ctx, func() { _ = w.file.SetReadDeadline(time.Now()) })
	go w.loop(rc, stop)
	return w, nil
}

// listenMessage is the subscription to process events: PROC_CN_MCAST_LISTEN sent to the proc connector.
func listenMessage() []byte {
	msg := make([]byte, nlmsgHdrLen+cnMsgLen+4)
	le := binary.LittleEndian
	le.PutUint32(msg[0:], uint32(len(msg)))
	le.PutUint16(msg[4:], nlmsgDone)
	le.PutUint32(msg[16:], cnIdxProc)
	le.PutUint32(msg[20:], cnValProc)
	le.PutUint16(msg[32:], 4)
	le.PutUint32(msg[36:], procCnListen)
	return msg
}

// loop handles events as they come, until Close or the context's end interrupts its wait.
func (w *ExecWatcher) loop(rc syscall.RawConn, stop func() bool) {
	defer close(w.done)
	defer stop()
	var peek [1]byte
	for {
		// Wait without holding the socket lock: the poller calls back when the socket is readable.
		err := rc.Read(func(fd uintptr) bool {
			_, err := rawRecv(int(fd), peek[:], unix.MSG_DONTWAIT|unix.MSG_PEEK)
			return !errors.Is(err, unix.EAGAIN)
		})
		if err != nil { // closed, or the context ended
			return
		}
		w.Sync()
	}
}

// Sync handles every event queued on the socket now, so that a caller about to look up a process that just
// exited sees its command line.
func (w *ExecWatcher) Sync() {
	w.sockMu.Lock()
	defer w.sockMu.Unlock()
	for !w.closed {
		// Raw: the socket does not block, and an ordinary system call would wake the runtime's monitor
		// thread from its sleep on every event.
		n, err := rawRecv(w.fd, w.buf, unix.MSG_DONTWAIT)
		if err != nil {
			if errors.Is(err, unix.ENOBUFS) {
				w.mu.Lock()
				w.lost++
				w.mu.Unlock()
				continue
			}
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return // EAGAIN: drained
		}
		_ = parseNetlinkMessages(w.buf[:n], func(_ uint16, p []byte) error {
			if ev, ok := parseProcEvent(p); ok {
				w.handle(ev)
			}
			return nil
		})
	}
}

func (w *ExecWatcher) handle(ev ProcEvent) {
	if ev.PID != ev.TGID { // a thread, not a process
		return
	}
	now := time.Now().Round(0) // wall clock only: start times are stored and compared across runs
	switch ev.What {
	case procEventExec:
		// Its fork's record (or an earlier exec's) knows its parent; one older than staleRecord may be a
		// process that had the PID before (its own fork missed: ENOBUFS), so stat is read again.
		prev, forked := w.table.Lookup(ev.TGID)
		forked = forked && now.Sub(prev.At) < staleRecord
		cmd, ppid, err := w.reader(ev.TGID, !forked)
		if err != nil {
			// It ran and ended before tare could read it (a busy node delays tare's wake-up past a program
			// of a few milliseconds). Its exec is recorded with no command line, so it is named by its comm
			// and not by the fork's record, which holds its parent's command line.
			w.mu.Lock()
			w.unnamed++
			w.mu.Unlock()
			w.table.Execed(ev.TGID, ExecInfo{Started: now, At: now})
			return
		}
		if isCommName(cmd) { // ending as it was read: named by its comm all the same
			w.mu.Lock()
			w.unnamed++
			w.mu.Unlock()
		}
		w.table.Execed(ev.TGID, ExecInfo{Cmdline: cmd, PPID: ppid, Started: now, At: now})
	case procEventFork:
		w.mu.Lock()
		w.starts++
		w.mu.Unlock()
		parent, ok := w.table.Lookup(ev.ParentPID)
		if !ok { // a parent older than the watcher (a kubelet, a shim): read once, for all its forks
			if cmd, ppid, err := w.reader(ev.ParentPID, true); err == nil {
				parent = ExecInfo{Cmdline: cmd, PPID: ppid, At: now} // its start is unknown
				w.table.put(ev.ParentPID, parent)
			}
		}
		// A fork that does not exec keeps its parent's command line (none if the parent could not be read).
		w.table.Forked(ev.TGID, ExecInfo{Cmdline: parent.Cmdline, PPID: ev.ParentPID, Started: now, At: now})
	}
}

// isCommName says whether cmd is a comm in brackets, the name CmdlineReader gives a process whose command
// line was empty (it was ending).
func isCommName(cmd string) bool {
	return len(cmd) > 2 && cmd[0] == '[' && cmd[len(cmd)-1] == ']' && !strings.ContainsRune(cmd, ' ')
}

// Lost reports how many event batches the kernel dropped because tare fell behind.
func (w *ExecWatcher) Lost() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lost
}

// Unnamed is how many execs the watcher saw whose program ended before its command line could be read.
func (w *ExecWatcher) Unnamed() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.unnamed
}

// Starts is how many processes the watcher saw forked since it started.
func (w *ExecWatcher) Starts() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.starts
}

// Wait blocks until the watcher's goroutine has stopped (after ctx ended).
func (w *ExecWatcher) Wait() { <-w.done }

// Close stops the watcher and waits for its goroutine; the socket is closed with it.
func (w *ExecWatcher) Close() error {
	var err error
	w.sockMu.Lock()
	if !w.closed {
		w.closed = true
		err = w.file.Close() // ends the loop's wait
	}
	w.sockMu.Unlock()
	w.Wait()
	return err
}
