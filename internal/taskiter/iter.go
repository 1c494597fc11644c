package taskiter

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"

	"github.com/tare-dev/tare/internal/bpfstats"
)

// Iter is a loaded and attached task pass (PassOpenCoded or PassBPFIter). It is not safe for concurrent use.
type Iter struct {
	pass    Pass
	skipped []string // why cheaper passes were not used
	objs    closer
	prog    *ebpf.Program
	link    *link.Iter
	emitAll *ebpf.Variable
	buf     []byte
	all     bool // emit_all as last set in the kernel

	// PassBPFIter only: the groups it left open in the last pass, that pass's session, its state map, and
	// the passes since the state of ended groups was last removed.
	unfinished, session *ebpf.Variable
	groups              *ebpf.Map
	sinceCollect        int
	seen                map[int]int // onceEach's index, kept between passes
	duplicates          int         // records onceEach dropped, all passes (the tests' check that none is)
}

// readSize is the buffer of one read(2) of the iterator: the kernel fills up to its own 32 KiB buffer per
// call, so a larger one saves nothing.
const readSize = 32 << 10

// collectEvery is how many passes of PassBPFIter go between removals of the state of ended groups: each
// costs two system calls per group, and until then an ended group holds about 100 bytes of its map.
const collectEvery = 64

// Pass says which pass this is.
func (it *Iter) Pass() Pass { return it.pass }

// Programs returns the pass's program for bpfstats, marked InSelf: it runs inside the read(2) of the caller
// (tare), so its run time is already in tare's system time.
func (it *Iter) Programs() []bpfstats.Program {
	return []bpfstats.Program{{Name: "taskiter/" + string(it.pass), InSelf: true, Prog: it.prog}}
}

// Skipped says why Open did not use a cheaper pass than this one, a sentence each; nil when it did not skip.
func (it *Iter) Skipped() []string { return it.skipped }

// Close detaches the iterator and releases its programs and maps (and the state they hold).
func (it *Iter) Close() error {
	err := it.link.Close()
	return errors.Join(err, it.objs.Close())
}

// Changed appends to dst the thread groups whose CPU time moved since the previous read (by Changed or
// All), and those not reported before, so the first read reports every thread group. A group missing from
// the result did not run since it was last reported. A process that exited is never reported: its last
// CPU comes from elsewhere (taskstats exit notifications). One read costs about 0.4 µs a task with the
// kernel's caches cold, nearly all of it in the kernel, charged to the calling thread.
//
// With PassBPFIter, a group whose threads did not add up within the pass (a thread born or ended during
// the walk) comes at the end of the pass, inexact; a group comes at most once a pass. When the
// pass could not account for every group, the error matches ErrIncomplete: the groups returned are right,
// and groups missing from them may have moved too.
func (it *Iter) Changed(dst []Group) ([]Group, error) { return it.read(dst, false) }

// All appends to dst every thread group visible in the caller's PID namespace, moved or not. With
// PassBPFIter the error matches ErrIncomplete when a group may be missing, as for Changed.
func (it *Iter) All(dst []Group) ([]Group, error) { return it.read(dst, true) }

func (it *Iter) read(dst []Group, all bool) ([]Group, error) {
	if all != it.all {
		v := uint32(0)
		if all {
			v = 1
		}
		if err := it.emitAll.Set(v); err != nil {
			return dst, fmt.Errorf("setting the task iterator's mode: %w", err)
		}
		it.all = all
	}
	from := len(dst)
	dst, err := it.readPass(dst)
	if it.unfinished != nil {
		if it.seen == nil {
			it.seen = map[int]int{}
		}
		var dropped int
		dst, dropped = onceEach(dst, from, it.seen)
		it.duplicates += dropped
	}
	if err != nil || it.unfinished == nil {
		return dst, err
	}
	var open uint32
	if err := it.unfinished.Get(&open); err != nil {
		return dst, fmt.Errorf("reading the task pass's open groups: %w", err)
	}
	if it.sinceCollect++; it.sinceCollect >= collectEvery {
		if err := it.collect(); err != nil {
			return dst, err
		}
	}
	if open > 0 {
		return dst, fmt.Errorf("%w: %d thread groups did not add up (threads born or ended during the walk)", ErrIncomplete, open)
	}
	return dst, nil
}

// readPass runs one pass of the iterator.
func (it *Iter) readPass(dst []Group) ([]Group, error) {
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

// stateSize and stateSession are sizeof(struct state) and offsetof(struct state, session) in bpfiter.bpf.c.
const stateSize, stateSession = 88, 16

// collect removes from PassBPFIter's map the groups the last pass did not visit: they ended. Every live
// group is visited by every pass.
func (it *Iter) collect() error {
	it.sinceCollect = 0
	var last uint64
	if err := it.session.Get(&last); err != nil {
		return fmt.Errorf("reading the task pass's session: %w", err)
	}
	var ended []uint32
	var key uint32
	val := make([]byte, stateSize)
	entries := it.groups.Iterate()
	for entries.Next(&key, &val) {
		if binary.NativeEndian.Uint64(val[stateSession:]) != last {
			ended = append(ended, key)
		}
	}
	if err := entries.Err(); err != nil {
		return fmt.Errorf("listing the task pass's groups: %w", err)
	}
	for _, k := range ended {
		if err := it.groups.Delete(k); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			return fmt.Errorf("removing an ended group from the task pass: %w", err)
		}
	}
	return nil
}
