package taskiter

import (
	"errors"
	"fmt"
	"io"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// Iter is a loaded and attached task iterator. It is not safe for concurrent use.
type Iter struct {
	objs taskiterObjects
	link *link.Iter
	buf  []byte
	all  bool // emit_all as last set in the kernel
}

// readSize is the buffer of one read(2) of the iterator: the kernel fills up to its own 32 KiB buffer per
// call, so a larger one saves nothing.
const readSize = 32 << 10

// Open loads the BPF task iterator into the kernel and attaches it. The error matches ErrNotSupported when
// this kernel or this process's privileges do not allow it; it then says what is missing.
func Open() (*Iter, error) {
	if err := Check(); err != nil {
		return nil, err
	}
	spec, err := loadTaskiter()
	if err != nil {
		return nil, fmt.Errorf("reading the embedded task iterator: %w", err)
	}
	it := &Iter{buf: make([]byte, readSize)}
	if err := spec.LoadAndAssign(&it.objs, nil); err != nil {
		return nil, loadError(err)
	}
	l, err := link.AttachIter(link.IterOptions{Program: it.objs.ThreadGroups})
	if err != nil {
		_ = it.objs.Close()
		return nil, loadError(fmt.Errorf("attaching the task iterator: %w", err))
	}
	it.link = l
	return it, nil
}

// loadError classifies a failure to load or attach: missing privileges, a kernel without BTF, or one
// without open-coded task iterators all mean the feature is not available here.
func loadError(err error) error {
	switch {
	case errors.Is(err, unix.EPERM), errors.Is(err, unix.EACCES):
		return fmt.Errorf("%w: loading the BPF task iterator: %w: needs CAP_BPF and CAP_PERFMON, or CAP_SYS_ADMIN (run as root)", ErrNotSupported, err)
	case errors.Is(err, ebpf.ErrNotSupported):
		return fmt.Errorf("%w: loading the BPF task iterator: %w: needs kernel BTF (CONFIG_DEBUG_INFO_BTF) and Linux 6.7 or later", ErrNotSupported, err)
	}
	var verr *ebpf.VerifierError
	if errors.As(err, &verr) {
		return fmt.Errorf("%w: the kernel's verifier refused the task iterator (open-coded task iterators need Linux 6.7 or later): %w", ErrNotSupported, err)
	}
	return fmt.Errorf("%w: loading the BPF task iterator: %w", ErrNotSupported, err)
}

// Close detaches the iterator and releases its programs and maps (and the per-task state they hold).
func (it *Iter) Close() error {
	err := it.link.Close()
	return errors.Join(err, it.objs.Close())
}

// Changed appends to dst the thread groups whose CPU time moved since the previous read (by Changed or
// All), and those not reported before, so the first read reports every thread group. A group missing from
// the result did not run since it was last reported. A process that exited is never reported: its last
// CPU comes from elsewhere (taskstats exit notifications). One read costs about 0.4 µs a task with the
// kernel's caches cold, nearly all of it in the kernel, charged to the calling thread.
func (it *Iter) Changed(dst []Group) ([]Group, error) { return it.read(dst, false) }

// All appends to dst every thread group visible in the caller's PID namespace, moved or not.
func (it *Iter) All(dst []Group) ([]Group, error) { return it.read(dst, true) }

func (it *Iter) read(dst []Group, all bool) ([]Group, error) {
	if all != it.all {
		v := uint32(0)
		if all {
			v = 1
		}
		if err := it.objs.EmitAll.Set(v); err != nil {
			return dst, fmt.Errorf("setting the task iterator's mode: %w", err)
		}
		it.all = all
	}
	f, err := it.link.Open()
	if err != nil {
		return dst, fmt.Errorf("starting a task iterator pass: %w", err)
	}
	defer func() { _ = f.Close() }()
	var tail []byte // a record split across reads (the kernel writes whole records, but do not rely on it)
	for {
		n, err := f.Read(it.buf[len(tail):])
		if n > 0 {
			b := it.buf[:len(tail)+n]
			var rest []byte
			var perr error
			if dst, rest, perr = parseGroups(b, dst); perr != nil {
				return dst, perr
			}
			tail = it.buf[:copy(it.buf, rest)]
		}
		if errors.Is(err, io.EOF) || (n == 0 && err == nil) {
			break
		}
		if err != nil {
			return dst, fmt.Errorf("reading the task iterator: %w", err)
		}
	}
	if len(tail) > 0 {
		return dst, fmt.Errorf("task iterator: %d trailing bytes: %w", len(tail), ErrMalformed)
	}
	return dst, nil
}
