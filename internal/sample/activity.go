package sample

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/tare-dev/tare/internal/kernel"
	"github.com/tare-dev/tare/internal/taskiter"
)

// activity tells which processes ran since the previous sample, from one pass of a BPF task iterator over
// every task of the node, so that the sampler reads only those: a process whose CPU time did not move has
// no CPU, I/O or memory activity to read. A pass costs about 0.06 µs a task (open-coded) to 0.25 µs
// (bpf-iter), in the kernel; reading a process costs a system call or more, about 2.5 µs.
//
// Loading the iterator costs about 25 ms of CPU (decoding the kernel's BTF, verifying the program), as
// much as some 10,000 reads of idle processes. So it is loaded only once the sampler has made that many
// reads it would have saved: at once on a node with thousands of processes, never in a short run on a small
// one. Which pass is loaded is taskiter.Open's choice (open-coded, else bpf-iter), named in the CPU source
// with why a cheaper one was skipped; a pass forced by taskiter.PassEnv is loaded by New, and New fails if
// it cannot be. All methods accept a nil receiver (no iterator: every process is read).
type activity struct {
	procRoot   string
	forced     taskiter.Pass          // the pass TARE_TASK_PASS forces, PassAuto to let taskiter choose
	it         *taskiter.Iter         // nil until loaded
	reads      int                    // reads of known processes outside detail samples, while not loaded
	failed     bool                   // loading failed: do not try again
	seen       map[int]bool           // thread groups the iterator has reported at least once
	moved      map[int]taskiter.Group // thread groups whose CPU time moved in the last pass
	buf        []taskiter.Group
	ok         bool      // the last pass succeeded
	passAt     time.Time // when the last pass began: what it describes is from then
	passes     int       // passes run
	incomplete int       // passes that could not tell every group that moved (taskiter.ErrIncomplete)
}

// loadAfterReads is how many saved reads pay for loading the iterator (25 ms / 2.5 µs).
const loadAfterReads = 10_000

// newActivity checks that the task iterator can describe the processes procRoot lists, without loading
// it: the privileges and kernel BTF it needs, and a procRoot that is the proc of tare's own PID namespace,
// as the PIDs the iterator reports are. pass is the pass to load (taskiter.PassAuto: the cheapest that
// loads).
func newActivity(procRoot string, pass taskiter.Pass) (*activity, error) {
	if err := taskiter.Check(); err != nil {
		return nil, err
	}
	if self, err := os.Readlink(procRoot + "/self"); err != nil || self != strconv.Itoa(os.Getpid()) {
		return nil, fmt.Errorf("%w: %s is not the proc of tare's own PID namespace (%s/self = %q), whose PIDs the iterator reports",
			taskiter.ErrNotSupported, procRoot, procRoot, self)
	}
	return &activity{procRoot: procRoot, forced: pass, seen: map[int]bool{}, moved: map[int]taskiter.Group{}}, nil
}

// load loads the iterator now.
func (a *activity) load() error {
	it, err := taskiter.OpenPass(a.forced)
	if err != nil {
		a.failed = true
		return err
	}
	a.it = it
	return nil
}

// passActivity runs before the sample's reads: it loads the iterator once it pays for itself, then runs
// one pass. The pass runs on every sample, detail ones too, so that "moved" always means "since the
// previous sample", in which every process that moved was read.
func (s *Sampler) passActivity() {
	a := s.act
	if a == nil || a.failed {
		return
	}
	if a.it == nil {
		if a.reads < loadAfterReads {
			return
		}
		if err := a.load(); err != nil {
			s.meta.Limitations = append(s.meta.Limitations,
				fmt.Sprintf("%v; every process is read each second whether it ran or not (costlier with thousands of processes)", err))
			return
		}
		s.usingPass()
	}
	if err := a.pass(); err != nil {
		s.warnOnce("taskiter", err.Error())
	}
}

// usingPass names the loaded task pass in the sources, with why cheaper ones were not used.
func (s *Sampler) usingPass() {
	it := s.act.it
	s.meta.CPUSource = fmt.Sprintf("schedstat+taskstats, bpf task iterator (%s pass) skips idle processes", it.Pass())
	for _, why := range it.Skipped() {
		s.meta.Limitations = append(s.meta.Limitations, fmt.Sprintf("%s; the %s pass is used instead", why, it.Pass()))
	}
}

// pass runs the iterator once. After a failed or incomplete pass every process counts as moved, so nothing
// is missed; an incomplete one (threads born or ended during the walk) is no error, only counted.
func (a *activity) pass() error {
	clear(a.moved)
	var err error
	a.passAt = time.Now()
	a.buf, err = a.it.Changed(a.buf[:0])
	a.passes++
	a.ok = err == nil
	for _, g := range a.buf {
		a.moved[g.TGID] = g
		a.seen[g.TGID] = true
	}
	if errors.Is(err, taskiter.ErrIncomplete) {
		a.incomplete++
		return nil
	}
	if err != nil {
		return fmt.Errorf("task iterator pass: %w; reading every process this sample", err)
	}
	return nil
}

// limitation says how many passes were incomplete, if any.
func (a *activity) limitation() string {
	if a == nil || a.incomplete == 0 {
		return ""
	}
	return fmt.Sprintf("%d of %d task passes could not tell every process that ran (threads born or ended during the walk): every process was read in those samples",
		a.incomplete, a.passes)
}

// idle reports that pid certainly did not run since the previous pass. A process the iterator never
// reported (the kernel may hide some from it) is never idle: it is read as before.
func (a *activity) idle(pid int) bool {
	if a == nil || a.it == nil || !a.ok || !a.seen[pid] {
		return false
	}
	_, moved := a.moved[pid]
	return !moved
}

// cpu returns the CPU time of pid's threads, live and exited, as the last pass read it: the sum of the
// threads' runtimes that taskstats' thread-group query returns, read for every process in the one pass
// instead of a query per process. ok is false when the pass did not report pid or a thread exited during
// the walk (the sum may miss it). reused reports that the pass saw another start time than start (clock
// ticks since boot, /proc/PID/stat's): the PID now belongs to another process.
func (a *activity) cpu(pid int, start uint64) (cpu uint64, ok, reused bool) {
	if a == nil || a.it == nil || !a.ok {
		return 0, false, false
	}
	g, moved := a.moved[pid]
	switch {
	case !moved:
		return 0, false, false
	case g.StartNs/uint64(time.Second/kernel.UserHZ) != start:
		return 0, false, true
	case g.Inexact:
		return 0, false, false
	}
	return g.CPUNs, true, false
}

// described returns the group the last pass reported for pid with a description its stat can come from
// (taskiter.Group.ProcStat): false when the pass did not report pid, or reported it without one.
func (a *activity) described(pid int) (taskiter.Group, bool) {
	if !a.loaded() {
		return taskiter.Group{}, false
	}
	g, ok := a.moved[pid]
	if !ok {
		return taskiter.Group{}, false
	}
	_, ok = g.ProcStat()
	return g, ok
}

// expect is told how many processes the baseline sample lists: with enough of them, the reads the iterator
// saves in the first five seconds alone pay for loading it, and it is loaded at once.
func (a *activity) expect(procs int) {
	if a != nil && a.it == nil && 5*procs >= loadAfterReads {
		a.reads = loadAfterReads
	}
}

// loaded reports that the iterator is loaded: idle and ran tell something.
func (a *activity) loaded() bool { return a != nil && a.it != nil }

// ran reports that the last pass saw pid's CPU time move (or failed, so that it may have).
func (a *activity) ran(pid int) bool {
	if !a.loaded() {
		return false
	}
	_, moved := a.moved[pid]
	return !a.ok || moved
}

// read counts a read of a known process outside a detail sample, one the iterator would have saved.
func (a *activity) read() {
	if a != nil && a.it == nil {
		a.reads++
	}
}

// forget drops the PIDs that are no longer listed.
func (a *activity) forget(listed map[int]bool) {
	if a == nil {
		return
	}
	for pid := range a.seen {
		if !listed[pid] {
			delete(a.seen, pid)
		}
	}
}

func (a *activity) close() {
	if a != nil && a.it != nil {
		_ = a.it.Close()
		a.it = nil
	}
}
