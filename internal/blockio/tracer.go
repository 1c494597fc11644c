package blockio

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"

	"github.com/tare-dev/tare/internal/bpfstats"
)

// Options tunes a Tracer. The zero value is ready to use.
type Options struct {
	// MaxRecords bounds the kernel's table of records (one per process, cgroup, disk and direction); once
	// full, the requests of a new key are counted in Snapshot.Dropped. 0 means 4096 (about 2 MiB at most,
	// allocated as records appear).
	MaxRecords uint32
}

// defaultMaxRecords is Options.MaxRecords' default, as in blockio.bpf.c.
const defaultMaxRecords = 4096

// Tracer counts block I/O by process from the moment Open returns until Close. Its methods are safe for
// concurrent use only in that Read may run while the kernel counts; do not call Close concurrently with
// Read.
type Tracer struct {
	objs  blockioObjects
	links []link.Link
}

// Open loads the BPF programs and attaches them to the block layer's tracepoints. The error matches
// ErrNotSupported when this kernel or this process's privileges do not allow it, and says what is missing.
// The programs stay attached until Close, or until this process exits: nothing is pinned, so a process
// killed by Ctrl-C leaves nothing behind.
func Open(opts Options) (*Tracer, error) {
	if err := Check(); err != nil {
		return nil, err
	}
	spec, err := loadBlockio()
	if err != nil {
		return nil, fmt.Errorf("reading the embedded block I/O programs: %w", err)
	}
	if opts.MaxRecords == 0 {
		opts.MaxRecords = defaultMaxRecords
	}
	spec.Maps[blockioMapStats].MaxEntries = opts.MaxRecords
	t := &Tracer{}
	if err := spec.LoadAndAssign(&t.objs, nil); err != nil {
		return nil, loadError("loading the block I/O programs", err)
	}
	// Creation first, completion last: a request completing while the others attach is then only ever
	// unmatched, never charged to the wrong process.
	for _, p := range []*ebpf.Program{t.objs.IoStart, t.objs.RqInsert, t.objs.RqIssue, t.objs.RqComplete} {
		l, err := link.AttachTracing(link.TracingOptions{Program: p})
		if err != nil {
			err = loadError(fmt.Sprintf("attaching %v", p), err)
			return nil, errors.Join(err, t.Close())
		}
		t.links = append(t.links, l)
	}
	return t, nil
}

// Programs returns the tracer's programs for bpfstats. They run in the tasks that submit, issue and
// complete I/O (interrupts included), not in tare, so their time is not in tare's system time.
func (t *Tracer) Programs() []bpfstats.Program {
	return []bpfstats.Program{{Name: "blockio/io_start", Prog: t.objs.IoStart}, {Name: "blockio/rq_insert", Prog: t.objs.RqInsert},
		{Name: "blockio/rq_issue", Prog: t.objs.RqIssue}, {Name: "blockio/rq_complete", Prog: t.objs.RqComplete}}
}

// Close detaches the programs and frees their maps; calling it again does nothing. The Tracer is unusable
// afterwards.
func (t *Tracer) Close() error {
	var errs []error
	for _, l := range t.links {
		errs = append(errs, l.Close())
	}
	t.links = nil
	errs = append(errs, t.objs.Close())
	return errors.Join(errs...)
}

// Read returns every record counted since Open. The kernel updates a record's counters one by one, so a
// record read while a request completes may show its bytes and not yet its histograms; the next Read
// catches up. A process that exited keeps its records.
func (t *Tracer) Read() (Snapshot, error) {
	var s Snapshot
	var k blockioKey
	var v blockioStat
	it := t.objs.Stats.Iterate()
	for it.Next(&k, &v) {
		s.Records = append(s.Records, record(&k, &v))
	}
	if err := it.Err(); err != nil {
		return Snapshot{}, fmt.Errorf("reading the block I/O records: %w", err)
	}
	if err := t.objs.Unmatched.Get(&s.Unmatched); err != nil {
		return Snapshot{}, fmt.Errorf("reading the unmatched count: %w", err)
	}
	if err := t.objs.Dropped.Get(&s.Dropped); err != nil {
		return Snapshot{}, fmt.Errorf("reading the dropped count: %w", err)
	}
	s.sort()
	return s, nil
}

// Settled returns how many request completions the kernel has finished accounting since Open. Every change
// to the records, the unmatched and the dropped counts ends by raising it, so a reader that read Settled
// before its previous Read, and finds it unchanged now, knows a new Read would return the same snapshot:
// a long-running reader (the agent) skips Read, a walk of the whole table, while the node does no block I/O.
func (t *Tracer) Settled() (uint64, error) {
	var n uint64
	if err := t.objs.Settled.Get(&n); err != nil {
		return 0, fmt.Errorf("reading the settled count: %w", err)
	}
	return n, nil
}

// Forget deletes the records of keys from the kernel's table, so that a long-running reader (the agent)
// keeps the table to the processes that do I/O now: call it for records already accounted whose process
// has ended. A key that counts again later starts from zero. Keys no longer in the table are skipped.
func (t *Tracer) Forget(keys []Key) error {
	var errs []error
	for _, k := range keys {
		kk := blockioKey{Tgid: k.PID, Dir: uint32(k.Dir), Major: k.Dev.Major, Minor: k.Dev.Minor, Cgroup: k.Cgroup}
		if err := t.objs.Stats.Delete(&kk); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("forgetting block I/O records: %w", err)
	}
	return nil
}

// record converts the kernel's key and value into a Record.
func record(k *blockioKey, v *blockioStat) Record {
	r := Record{
		Key:      Key{PID: k.Tgid, Cgroup: k.Cgroup, Dev: Dev{Major: k.Major, Minor: k.Minor}, Dir: Dir(k.Dir)},
		Comm:     comm(v.Comm[:]),
		Requests: v.Requests,
		Bytes:    v.Bytes,
		Device:   v.DeviceUs,
		Queue:    v.QueueUs,
	}
	if r.Dir > Other {
		r.Dir = Other
	}
	return r
}

// comm returns the task name in a NUL-padded kernel buffer.
func comm(b []int8) string {
	s := make([]byte, 0, len(b))
	for _, c := range b {
		if c == 0 {
			break
		}
		s = append(s, byte(c))
	}
	return string(s)
}
