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

	// PassOpenCoded only: the records of a pass, out[0:n_out], and the groups left out for want of room.
	out            *ebpf.Memory
	nOut, overflow *ebpf.Variable
	room           uint32 // the records a pass may write (max_out)

	// Both passes: the state of each group (slots, and groups for those whose slot another live group
	// holds), laid out as layout says, the variable that numbers the passes (session), and the passes
	// since the state of ended groups was last removed from groups.
	slots, groups *ebpf.Map
	layout        stateLayout
	session       *ebpf.Variable
	sinceCollect  int

	// PassBPFIter only: the groups it left open in the last pass.
	unfinished      *ebpf.Variable
	nopen, openKeys *ebpf.Variable // the groups left open by the last pass (openGroups)
	seen            map[int]int    // onceEach's index, kept between passes
	duplicates      int            // records onceEach dropped, all passes (the tests' check that none is)
}

// readSize is the buffer of one read(2) of the iterator: the kernel fills up to its own 32 KiB buffer per
// call, so a larger one saves nothing.
const readSize = 32 << 10

// collectEvery is how many passes go between removals of the state of ended groups from groups: each
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
// CPU comes from elsewhere (taskstats exit notifications). One read costs about 0.06 µs a task with
// PassOpenCoded and 0.25 µs with PassBPFIter (3,000 idle processes, back-to-back passes; more with the
// kernel's caches cold), nearly all of it in the kernel, charged to the calling thread.
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
	if err == nil && it.nopen != nil {
		dst, err = it.openGroups(dst)
	}
	if it.unfinished != nil {
		if it.seen == nil {
			it.seen = map[int]int{}
		}
		var dropped int
		dst, dropped = onceEach(dst, from, it.seen)
		it.duplicates += dropped
	}
	if err != nil && !errors.Is(err, ErrIncomplete) {
		return dst, err
	}
	if it.sinceCollect++; it.sinceCollect >= collectEvery {
		if cerr := it.collect(); cerr != nil {
			return dst, cerr
		}
	}
	if err != nil || it.unfinished == nil {
		return dst, err
	}
	var open uint32
	if err := it.unfinished.Get(&open); err != nil {
		return dst, fmt.Errorf("reading the task pass's open groups: %w", err)
	}
	if open > 0 {
		return dst, fmt.Errorf("%w: %d thread groups did not add up (threads born or ended during the walk)", ErrIncomplete, open)
	}
	return dst, nil
}

// readPass runs one pass of the iterator.
func (it *Iter) readPass(dst []Group) ([]Group, error) {
	if it.out != nil {
		return it.readOut(dst)
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

// The layout of struct state in bpfiter.bpf.c: its size and the offsets of its fields that user space reads.
const (
	stateSize    = 88
	stateSession = 16
	stateDead    = 24
	stateLive    = 32
	stateThreads = 40
	stateOpenAs  = 48 // struct group, groupSize bytes
	stateTGID    = 84
)

// stateLayout is where user space finds what it reads in a pass's state of a group: its size, and the
// offsets of the group's TGID and of the pass that last visited it.
type stateLayout struct{ size, tgid, session int }

var (
	bpfIterState   = stateLayout{size: stateSize, tgid: stateTGID, session: stateSession}
	openCodedState = stateLayout{size: 32, tgid: 0, session: 24} // struct last in taskiter.bpf.c
)

// nslots is NSLOTS in both programs: a group's state is in slots at tgid % nslots when it holds the group.
const nslots = 1 << 14

// maxOpen is MAX_OPEN in bpfiter.bpf.c, the length of open_keys.
const maxOpen = 512

// openGroups appends the groups PassBPFIter's last pass left open (threads born or ended during the walk
// kept their count from adding up), as moved and inexact: each as it was described at its first visit,
// with the CPU time and threads the pass added up. The program lists them in open_keys; writing them from
// the program's last call took a loop the verifier walked 512 times at every load.
func (it *Iter) openGroups(dst []Group) ([]Group, error) {
	var n uint32
	if err := it.nopen.Get(&n); err != nil {
		return dst, fmt.Errorf("reading the task pass's open groups: %w", err)
	}
	if n == 0 {
		return dst, nil
	}
	var session uint64
	if err := it.session.Get(&session); err != nil {
		return dst, fmt.Errorf("reading the task pass's session: %w", err)
	}
	var keys [maxOpen]uint32
	if err := it.openKeys.Get(&keys); err != nil {
		return dst, fmt.Errorf("reading the task pass's open groups: %w", err)
	}
	val := make([]byte, it.layout.size)
	for _, key := range keys[:min(n, maxOpen)] {
		found, err := it.state(key, val)
		if err != nil {
			return dst, fmt.Errorf("reading an open group of the task pass: %w", err)
		}
		if !found {
			continue
		}
		if dst, err = openGroup(val, session, dst); err != nil {
			return dst, err
		}
	}
	return dst, nil
}

// state reads the state of group key into val: from its slot when it holds the group, else from groups;
// false when it has none.
func (it *Iter) state(key uint32, val []byte) (bool, error) {
	if err := it.slots.Lookup(key%nslots, &val); err != nil {
		return false, err
	}
	if binary.NativeEndian.Uint32(val[it.layout.tgid:]) == key {
		return true, nil
	}
	err := it.groups.Lookup(key, &val)
	if errors.Is(err, ebpf.ErrKeyNotExist) {
		return false, nil
	}
	return err == nil, err
}

// openGroup appends the group whose state is val when it is still open in session.
func openGroup(val []byte, session uint64, dst []Group) ([]Group, error) {
	ne := binary.NativeEndian
	threads := ne.Uint32(val[stateThreads:])
	if ne.Uint64(val[stateSession:]) != session || threads == 0 {
		return dst, nil // written after all, or not of this pass
	}
	g, err := parseGroup(val[stateOpenAs : stateOpenAs+groupSize])
	if err != nil {
		return dst, err
	}
	g.CPUNs = ne.Uint64(val[stateDead:]) + ne.Uint64(val[stateLive:])
	g.Threads = int(threads)
	g.Inexact = true
	return append(dst, g), nil
}

// collect removes from the groups map the groups the last pass did not visit: they ended. Every live group
// is visited by every pass. (A slot of a group that ended is taken over by the next group that needs it.)
func (it *Iter) collect() error {
	it.sinceCollect = 0
	var last uint64
	if err := it.session.Get(&last); err != nil {
		return fmt.Errorf("reading the task pass's session: %w", err)
	}
	var ended []uint32
	var key uint32
	val := make([]byte, it.layout.size)
	entries := it.groups.Iterate()
	for entries.Next(&key, &val) {
		if binary.NativeEndian.Uint64(val[it.layout.session:]) != last {
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

// readOut runs one pass of PassOpenCoded: a read of the iterator calls the program (it writes nothing to
// the read), which leaves the pass's records in out.
func (it *Iter) readOut(dst []Group) ([]Group, error) {
	f, err := it.link.Open()
	if err != nil {
		return dst, fmt.Errorf("starting a task iterator pass: %w", err)
	}
	_, err = io.Copy(io.Discard, f)
	_ = f.Close()
	if err != nil {
		return dst, fmt.Errorf("reading the task iterator: %w", err)
	}
	var n, over uint32
	if err := it.nOut.Get(&n); err != nil {
		return dst, fmt.Errorf("reading the task pass's record count: %w", err)
	}
	if err := it.overflow.Get(&over); err != nil {
		return dst, fmt.Errorf("reading the task pass's record count: %w", err)
	}
	if need := int(n) * recordSize; cap(it.buf) < need {
		it.buf = make([]byte, need)
	}
	b := it.buf[:int(n)*recordSize]
	if _, err := it.out.ReadAt(b, 0); err != nil {
		return dst, fmt.Errorf("reading the task pass's records: %w", err)
	}
	dst, rest, err := parseGroups(b, dst)
	if err == nil && len(rest) > 0 {
		err = fmt.Errorf("task iterator: %d trailing bytes: %w", len(rest), ErrMalformed)
	}
	if err == nil && over > 0 {
		err = fmt.Errorf("%w: %d thread groups moved beyond the pass's room for %d records; they come in the next pass", ErrIncomplete, over, it.room)
	}
	return dst, err
}

// maxOut is MAX_OUT in taskiter.bpf.c: the room of out[], and the most a pass may use (max_out).
const maxOut = 65536
