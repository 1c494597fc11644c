package taskiter

import (
	"errors"
	"fmt"
	"os"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/tare-dev/tare/internal/kernel"
)

// Pass names a way to read the CPU time of every thread group once per sample.
type Pass string

// The passes, cheapest first. Open tries PassOpenCoded, then PassBPFIter; PassProc is the callers' own
// reading of every process, which this package only names.
const (
	PassAuto Pass = "" // the first of the chain that loads
	// PassOpenCoded is taskiter.bpf.c: a task iterator that walks each group's threads from its leader with
	// open-coded task iterators and keeps its state in an array by TGID. Linux 6.7 or later.
	PassOpenCoded Pass = "open-coded"
	// PassBPFIter is bpfiter.bpf.c: a task iterator that adds up the threads of each group as the kernel
	// shows them, one by one, with its state in an array by TGID. Linux 5.8 or later.
	PassBPFIter Pass = "bpf-iter"
	// PassProc is no task pass: the caller reads every process each sample.
	PassProc Pass = "proc"
)

// PassEnv is the environment variable that forces a pass (open-coded, bpf-iter or proc), for tests and
// benchmarks. A forced pass that cannot load is an error, not a fallback.
const PassEnv = "TARE_TASK_PASS"

// PassFromEnv returns the pass PassEnv forces, PassAuto when it is unset or empty. It is the one place
// that reads the variable.
func PassFromEnv() (Pass, error) {
	p := Pass(os.Getenv(PassEnv))
	switch p {
	case PassAuto, PassOpenCoded, PassBPFIter, PassProc:
		return p, nil
	}
	return PassAuto, fmt.Errorf("%s=%q: want %s, %s or %s", PassEnv, string(p), PassOpenCoded, PassBPFIter, PassProc)
}

// kernelNeeds says what a pass needs of the kernel, for error messages and the docs.
func (p Pass) kernelNeeds() string {
	switch p {
	case PassOpenCoded:
		// On 6.1 the loader names bpf_rdonly_cast (6.2) as the missing kfunc: it comes first in the program.
		return "Linux 6.7 or later (open-coded task iterators: the bpf_iter_task_new kfuncs; and bpf_rdonly_cast, 6.2)"
	case PassBPFIter:
		return "Linux 5.8 or later (bpf_iter task programs)"
	}
	return ""
}

// Open loads the cheapest task pass this kernel and this process allow: PassOpenCoded, else PassBPFIter.
// Iter.Skipped says why a cheaper one was not used. The error matches ErrNotSupported when neither loads,
// and says why each did not.
func Open() (*Iter, error) { return defaultLoader().open(PassAuto) }

// OpenPass loads the given pass (PassAuto: as Open). A BPF pass that cannot load is an error matching
// ErrNotSupported that names it; PassProc is always such an error, since it has no iterator.
func OpenPass(p Pass) (*Iter, error) { return defaultLoader().open(p) }

// loader loads the passes; tests replace its parts to see the chain choose.
type loader struct {
	privileged bool                           // kernel.CanLoadBPF
	btf        string                         // kernel.KernelBTF
	load       map[Pass]func() (*Iter, error) // how each BPF pass loads
}

func defaultLoader() loader {
	return loader{privileged: kernel.CanLoadBPF(), btf: kernel.KernelBTF,
		load: map[Pass]func() (*Iter, error){PassOpenCoded: loadOpenCoded, PassBPFIter: loadBPFIter}}
}

func (l loader) open(p Pass) (*Iter, error) {
	if p == PassProc {
		return nil, fmt.Errorf("%w: %s=%s: every process is read", ErrNotSupported, PassEnv, PassProc)
	}
	if err := check(l.privileged, l.btf); err != nil {
		if p != PassAuto {
			return nil, fmt.Errorf("task pass %s, forced by %s: %w", p, PassEnv, err)
		}
		return nil, err
	}
	if p != PassAuto {
		it, err := l.load[p]()
		if err != nil {
			return nil, fmt.Errorf("task pass %s, forced by %s: %w", p, PassEnv, err)
		}
		return it, nil
	}
	var skipped []string
	var errs []error
	for _, p := range []Pass{PassOpenCoded, PassBPFIter} {
		it, err := l.load[p]()
		if err == nil {
			it.skipped = skipped
			return it, nil
		}
		if !errors.Is(err, ErrNotSupported) {
			return nil, err
		}
		skipped = append(skipped, fmt.Sprintf("task pass %s: %v", p, err))
		errs = append(errs, fmt.Errorf("task pass %s: %w", p, err))
	}
	return nil, errors.Join(errs...)
}

// loadOpenCoded loads taskiter.bpf.c.
func loadOpenCoded() (*Iter, error) { return loadOpenCodedRoom(maxOut) }

// loadOpenCodedRoom loads taskiter.bpf.c with room for that many records a pass (maxOut but in tests).
func loadOpenCodedRoom(room uint32) (*Iter, error) {
	spec, err := loadTaskiter()
	if err != nil {
		return nil, fmt.Errorf("reading the embedded task iterator: %w", err)
	}
	if err := checkRecord(spec); err != nil {
		return nil, err
	}
	room = min(room, maxOut) // out[] holds maxOut records
	if v, ok := spec.Variables["max_out"]; !ok || v.Set(room) != nil {
		return nil, fmt.Errorf("the embedded task iterator has no max_out: %w", ErrMalformed)
	}
	var objs taskiterObjects
	if err := spec.LoadAndAssign(&objs, nil); err != nil {
		return nil, loadError(PassOpenCoded, err)
	}
	l, err := attachToSelf(objs.ThreadGroups)
	if err != nil {
		_ = objs.Close()
		return nil, loadError(PassOpenCoded, err)
	}
	mem, err := objs.Out.Memory()
	if err != nil {
		_ = l.Close()
		_ = objs.Close()
		return nil, loadError(PassOpenCoded, fmt.Errorf("mapping the task pass's records: %w", err))
	}
	return &Iter{pass: PassOpenCoded, objs: &objs, prog: objs.ThreadGroups, link: l, emitAll: objs.EmitAll, buf: make([]byte, readSize),
		out: mem, nOut: objs.N_out, overflow: objs.Overflow, room: room,
		slots: objs.Slots, groups: objs.Groups, layout: openCodedState, session: objs.PassSeq}, nil
}

// loadBPFIter loads bpfiter.bpf.c.
func loadBPFIter() (*Iter, error) {
	spec, err := loadBpfiter()
	if err != nil {
		return nil, fmt.Errorf("reading the embedded task iterator: %w", err)
	}
	raiseErr := raiseMemlock() // for its map, on 5.8 to 5.10 (memlock.go)
	var objs bpfiterObjects
	if err := spec.LoadAndAssign(&objs, nil); err != nil {
		return nil, memlockError(PassBPFIter, err, raiseErr)
	}
	it, err := attach(PassBPFIter, objs.ThreadGroups58, &objs, objs.EmitAll)
	if err != nil {
		return nil, err
	}
	it.unfinished, it.session, it.slots, it.groups, it.layout = objs.Unfinished, objs.PassSession, objs.Slots, objs.Groups, bpfIterState
	it.nopen, it.openKeys = objs.Nopen, objs.OpenKeys
	return it, nil
}

type closer interface{ Close() error }

func attach(p Pass, prog *ebpf.Program, objs closer, emitAll *ebpf.Variable) (*Iter, error) {
	l, err := link.AttachIter(link.IterOptions{Program: prog})
	if err != nil {
		_ = objs.Close()
		return nil, loadError(p, fmt.Errorf("attaching the task iterator: %w", err))
	}
	return &Iter{pass: p, objs: objs, prog: prog, link: l, emitAll: emitAll, buf: make([]byte, readSize)}, nil
}

// loadError classifies a failure to load or attach: missing privileges, a kernel without BTF, or one too
// old for the pass all mean the pass is not available here.
func loadError(p Pass, err error) error {
	switch {
	case errors.Is(err, unix.EPERM), errors.Is(err, unix.EACCES):
		return fmt.Errorf("%w: loading the BPF task iterator: %w: needs CAP_BPF and CAP_PERFMON, or CAP_SYS_ADMIN (run as root)", ErrNotSupported, err)
	case errors.Is(err, ebpf.ErrNotSupported):
		return fmt.Errorf("%w: loading the BPF task iterator: %w: needs kernel BTF (CONFIG_DEBUG_INFO_BTF) and %s", ErrNotSupported, err, p.kernelNeeds())
	}
	var verr *ebpf.VerifierError
	if errors.As(err, &verr) {
		return fmt.Errorf("%w: the kernel's verifier refused the task iterator (needs %s): %w", ErrNotSupported, p.kernelNeeds(), err)
	}
	return fmt.Errorf("%w: loading the BPF task iterator (needs %s): %w", ErrNotSupported, p.kernelNeeds(), err)
}

// checkRecord holds the open-coded program's struct record (record.h, in its BTF as the out map's value)
// to recordSize, the size parseGroups reads: the two are written apart, and a record of another size would
// be read as garbage. bpf-iter's program includes the same record.h (its BTF keeps no struct record: it
// writes a local one with bpf_seq_write), so TestRecordSize's check of the open-coded one holds for both.
func checkRecord(spec *ebpf.CollectionSpec) error {
	var rec *btf.Struct
	if err := spec.Types.TypeByName("record", &rec); err != nil {
		return fmt.Errorf("the embedded task iterator has no struct record: %w: %w", ErrMalformed, err)
	}
	if rec.Size != recordSize {
		return fmt.Errorf("the embedded task iterator's struct record is %d bytes, the parser reads %d: %w", rec.Size, recordSize, ErrMalformed)
	}
	return nil
}
