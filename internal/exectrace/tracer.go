package exectrace

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"
	"golang.org/x/sys/unix"

	"github.com/tare-dev/tare/internal/bpfstats"
	"github.com/tare-dev/tare/internal/kernel"
	"github.com/tare-dev/tare/internal/redact"
)

// ErrNotSupported means process starts cannot be traced here: a process without CAP_BPF and CAP_PERFMON (or
// CAP_SYS_ADMIN), a kernel without BTF or older than 5.8. The error wrapping it says which. Callers use the
// proc connector instead.
var ErrNotSupported = kernel.NotSupported("exec tracepoints unavailable")

// Options tunes a Tracer. The zero value is ready to use.
type Options struct {
	// BufferBytes is the ring buffer's size, a power of two of at least a page: the records that fit
	// between two Syncs (about 1.1 KiB each). 0 means 2 MiB.
	BufferBytes uint32
}

const defaultBufferBytes = 2 << 20

// Kinds of a record, as in exectrace.bpf.c.
const (
	kindFork = 1
	kindExec = 2
)

// Tracer follows process starts from Open to Close. It is safe for concurrent use.
type Tracer struct {
	objs   exectraceObjects
	links  []link.Link
	mu     sync.Mutex // guards rd and closed, and orders Syncs
	rd     *ringbuf.Reader
	closed bool
	table  *kernel.ExecTable
	rec    ringbuf.Record
	bad    int // records too short to decode
}

// Open loads the programs and attaches them; Sync records what they saw in table (one shared with the proc
// connector's watcher lets a caller switch from it to the tracer without a gap). The error matches
// ErrNotSupported when this kernel or this process's privileges do not allow it, and says what is missing.
func Open(table *kernel.ExecTable, opts Options) (*Tracer, error) {
	if err := kernel.CheckBPF(kernel.CanLoadBPF(), kernel.KernelBTF); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotSupported, err)
	}
	spec, err := loadExectrace()
	if err != nil {
		return nil, fmt.Errorf("reading the embedded exec tracing programs: %w", err)
	}
	if opts.BufferBytes == 0 {
		opts.BufferBytes = defaultBufferBytes
	}
	spec.Maps[exectraceMapEvents].MaxEntries = opts.BufferBytes
	t := &Tracer{table: table}
	if err := spec.LoadAndAssign(&t.objs, nil); err != nil {
		return nil, loadError("loading the exec tracing programs", err)
	}
	if t.rd, err = ringbuf.NewReader(t.objs.Events); err != nil {
		return nil, errors.Join(fmt.Errorf("reading the exec tracing ring buffer: %w", err), t.Close())
	}
	for _, p := range []*ebpf.Program{t.objs.ProcessFork, t.objs.ProcessExec} {
		l, err := link.AttachTracing(link.TracingOptions{Program: p})
		if err != nil {
			return nil, errors.Join(loadError(fmt.Sprintf("attaching %v", p), err), t.Close())
		}
		t.links = append(t.links, l)
	}
	return t, nil
}

// loadError says why the programs could not be loaded or attached.
func loadError(what string, err error) error {
	switch {
	case errors.Is(err, unix.EPERM), errors.Is(err, unix.EACCES):
		return fmt.Errorf("%w: %s: %w: needs CAP_BPF and CAP_PERFMON, or CAP_SYS_ADMIN (run as root), and no lockdown or seccomp policy forbidding BPF", ErrNotSupported, what, err)
	case errors.Is(err, ebpf.ErrNotSupported), errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("%w: %s: %w: needs kernel BTF (CONFIG_DEBUG_INFO_BTF) and Linux 5.8 or later", ErrNotSupported, what, err)
	}
	return fmt.Errorf("%w: %s: %w", ErrNotSupported, what, err)
}

// Close detaches the programs and frees the ring buffer; calling it again does nothing.
func (t *Tracer) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil
	}
	t.closed = true
	var errs []error
	for _, l := range t.links {
		errs = append(errs, l.Close())
	}
	if t.rd != nil {
		errs = append(errs, t.rd.Close())
	}
	errs = append(errs, t.objs.Close())
	return errors.Join(errs...)
}

// Programs returns the tracer's programs for bpfstats. Both run in the forking or exec'ing process, not in
// tare, so their time is not in tare's system time.
func (t *Tracer) Programs() []bpfstats.Program {
	return []bpfstats.Program{{Name: "exectrace/process_fork", Prog: t.objs.ProcessFork},
		{Name: "exectrace/process_exec", Prog: t.objs.ProcessExec}}
}

// Sync moves every record written so far into the table.
func (t *Tracer) Sync() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return
	}
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts)
	now := time.Now().Round(0)
	bootNow := uint64(ts.Nano())
	t.rd.SetDeadline(now) // already passed: read what is there, never wait
	for {
		if err := t.rd.ReadInto(&t.rec); err != nil {
			return // os.ErrDeadlineExceeded: drained
		}
		ev, ok := parseEvent(t.rec.RawSample)
		if !ok {
			t.bad++ // the program and this package disagree: counted as lost, not silently skipped
			continue
		}
		at := now
		if ev.bootNs <= bootNow {
			at = now.Add(-time.Duration(bootNow - ev.bootNs))
		}
		info := kernel.ExecInfo{Cmdline: ev.cmdline(), PPID: int(ev.ppid), Started: at, At: now}
		switch ev.kind {
		case kindFork:
			t.table.Forked(int(ev.tgid), info)
		case kindExec:
			t.table.Execed(int(ev.tgid), info)
		}
	}
}

// event is one record of the ring buffer (struct event of exectrace.bpf.c).
type event struct {
	bootNs     uint64
	kind       uint32
	tgid, ppid uint32
	argsFull   uint64
	args       []byte // aliases the record
}

// Offsets of struct event's fields (exectrace.bpf.c); TestEventLayout holds them to clang's layout.
const (
	offBootNs   = 0
	offKind     = 8
	offTGID     = 12
	offPPID     = 16
	offArgsLen  = 20
	offArgsFull = 24
	offArgs     = 32
	argsMax     = 1024
	eventSize   = offArgs + argsMax
)

// parseEvent decodes one record; false when it is too short (the program and this package disagree).
func parseEvent(b []byte) (event, bool) {
	if len(b) < eventSize {
		return event{}, false
	}
	ne := binary.NativeEndian
	ev := event{bootNs: ne.Uint64(b[offBootNs:]), kind: ne.Uint32(b[offKind:]), tgid: ne.Uint32(b[offTGID:]),
		ppid: ne.Uint32(b[offPPID:]), argsFull: ne.Uint64(b[offArgsFull:])}
	ev.args = b[offArgs : offArgs+min(int(ne.Uint32(b[offArgsLen:])), argsMax)]
	return ev, true
}

// cmdline is a record's redacted command line, as /proc/PID/cmdline would give it (a cut one ends in " …"
// instead of its last, partial, argument), or "" when it has none (a kernel thread, an argument area out of
// memory).
func (ev event) cmdline() string {
	b := bytes.TrimRight(ev.args, "\x00")
	if len(b) == 0 {
		return ""
	}
	args := strings.Split(string(b), "\x00")
	if ev.argsFull <= uint64(len(ev.args)) {
		return redact.Join(args)
	}
	// Cut inside an argument: it is only the start of one, and a secret cut short may not look like one any
	// more (a URL's password before its "@"), so it is left out.
	if ev.args[len(ev.args)-1] != 0 {
		args = args[:len(args)-1]
	}
	return strings.TrimSpace(redact.Join(args) + " …")
}

// Lost is how many records did not fit in the ring buffer, or could not be decoded.
func (t *Tracer) Lost() int {
	var n uint64
	_ = t.objs.Dropped.Get(&n)
	t.mu.Lock()
	defer t.mu.Unlock()
	return int(n) + t.bad
}
