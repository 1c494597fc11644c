package kernel

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

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

// ExecInfo is what tare captured of a process the moment it exec'd (or forked without exec'ing).
type ExecInfo struct {
	Cmdline string // redacted
	Comm    string
	PPID    int
	Started time.Time // when the process was forked (or exec'd, if tare missed the fork)
	At      time.Time // last update, for expiry
}

// ExecWatcher keeps the redacted command line of every process that exec'd recently, read from /proc the
// moment the proc connector announces the exec, so that processes living a few milliseconds keep their
// command line after they exit.
//
// The socket is non-blocking and waited on through Go's network poller, so no thread sits in a blocking
// system call between events: such a thread keeps the runtime's monitor thread (sysmon) polling every few
// milliseconds instead of sleeping, which cost tare more CPU on an idle node than reading it.
type ExecWatcher struct {
	fd     int
	file   *os.File // fd, registered with the network poller
	closed bool     // guarded by sockMu: fd is closed
	reader func(pid int) (cmdline, comm string, ppid int, err error)
	sockMu sync.Mutex // held while reading the socket, so Sync and the loop never race
	buf    []byte
	mu     sync.Mutex
	byPID  map[int]ExecInfo
	born   map[int]bool // processes forked since the last NewPIDs
	lost   int
	done   chan struct{}
}

// WatchExecs subscribes to proc connector events (needs CAP_NET_ADMIN) and serves them until ctx ends.
func WatchExecs(ctx context.Context, reader func(pid int) (string, string, int, error)) (*ExecWatcher, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, unix.NETLINK_CONNECTOR)
	if err != nil {
		return nil, fmt.Errorf("opening the proc connector: %w", err)
	}
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 8<<20)
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
	w := &ExecWatcher{fd: fd, file: os.NewFile(uintptr(fd), "proc connector"), reader: reader, byPID: map[int]ExecInfo{},
		born: map[int]bool{}, done: make(chan struct{}), buf: make([]byte, 64*1024)}
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
			_, _, err := unix.Recvfrom(int(fd), peek[:], unix.MSG_DONTWAIT|unix.MSG_PEEK)
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
		n, _, err := unix.Recvfrom(w.fd, w.buf, unix.MSG_DONTWAIT)
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
		cmd, comm, ppid, err := w.reader(ev.TGID)
		if err != nil {
			return
		}
		w.mu.Lock()
		started := now
		if prev, ok := w.byPID[ev.TGID]; ok {
			started = prev.Started
		}
		w.byPID[ev.TGID] = ExecInfo{Cmdline: cmd, Comm: comm, PPID: ppid, Started: started, At: now}
		w.mu.Unlock()
	case procEventFork:
		w.mu.Lock()
		parent, ok := w.byPID[ev.ParentPID]
		w.born[ev.TGID] = true
		w.mu.Unlock()
		if ok { // a fork that does not exec keeps its parent's command line
			parent.PPID, parent.Started, parent.At = ev.ParentPID, now, now
			w.put(ev.TGID, parent)
			return
		}
		if cmd, comm, ppid, err := w.reader(ev.TGID); err == nil {
			w.put(ev.TGID, ExecInfo{Cmdline: cmd, Comm: comm, PPID: ppid, Started: now, At: now})
		}
	}
}

func (w *ExecWatcher) put(pid int, info ExecInfo) {
	w.mu.Lock()
	w.byPID[pid] = info
	w.mu.Unlock()
}

// NewPIDs returns the processes forked since the previous call, after handling every queued event.
func (w *ExecWatcher) NewPIDs() []int {
	w.Sync()
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]int, 0, len(w.born))
	for pid := range w.born {
		out = append(out, pid)
	}
	clear(w.born)
	return out
}

// Lookup returns what was captured for pid, if anything.
func (w *ExecWatcher) Lookup(pid int) (ExecInfo, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	info, ok := w.byPID[pid]
	return info, ok
}

// Forget drops entries older than age, bounding memory on nodes with many processes.
func (w *ExecWatcher) Forget(age time.Duration) {
	cut := time.Now().Add(-age)
	w.mu.Lock()
	for pid, info := range w.byPID {
		if info.At.Before(cut) {
			delete(w.byPID, pid)
		}
	}
	w.mu.Unlock()
}

// Lost reports how many event batches the kernel dropped because tare fell behind.
func (w *ExecWatcher) Lost() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lost
}

// Wait blocks until the watcher's goroutine has stopped (after ctx ended).
func (w *ExecWatcher) Wait() { <-w.done }

// Close stops the watcher and waits for its goroutine; the socket is closed with it.
func (w *ExecWatcher) Close() {
	w.sockMu.Lock()
	if !w.closed {
		w.closed = true
		_ = w.file.Close() // ends the loop's wait
	}
	w.sockMu.Unlock()
	w.Wait()
}
