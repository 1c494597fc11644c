package kernel

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Reading cmdline and smaps_rollup takes the target process's memory-map lock (mmap_lock). A thread of the
// target that holds it for long, such as a page fault waiting on a hung NFS or FUSE server with an mmap or
// munmap queued behind it, makes every reader wait too, and only SIGKILL ends that wait: the classic `ps`
// hang. So these files are read on a goroutine of their own, with ordinary system calls, and the caller gives
// up after BlockingReadTimeout. The read itself cannot be cancelled: it goes on in the background, holding an
// OS thread and a file descriptor until the process lets go of its lock. A raw system call (rawio.go) would
// be worse than slow there: the blocked thread would keep its Go processor, and the garbage collector's
// stop-the-world, which cannot interrupt a thread inside the kernel, would wait for it forever.

const (
	// BlockingReadTimeout is how long tare waits for one read of cmdline or smaps_rollup. Healthy reads take
	// well under 10 ms, even smaps_rollup of a process with tens of GiB mapped; 200 ms leaves room for a busy
	// node, and a process that does not answer costs its sample at most that, once: until its read answers,
	// it is not read again.
	BlockingReadTimeout = 200 * time.Millisecond
	// maxStuckReads bounds the reads left waiting on locked processes at once (each holds an OS thread and a
	// file descriptor). Beyond it, reads of cmdline and smaps_rollup are skipped, without waiting, until one
	// answers: when many processes lock up together (a hung NFS server), the sampler waits for the first
	// four, 800 ms in all, and then for none.
	maxStuckReads = 4
	// maxStuckLog bounds the stuck reads a reader remembers by name for the limitations it reports.
	maxStuckLog = 32
	// maxBlockingRead bounds what one read returns, like ReadBounded.
	maxBlockingRead = 1 << 20
)

// ErrStuck marks a read of a process's file that did not answer within the deadline, or that was not tried
// because an earlier read of the same process (or too many reads of others) had not answered yet.
var ErrStuck = errors.New("no answer: the process's memory map is locked")

// lockedWhy says what usually holds a process's memory map, and what the user can look for.
const lockedWhy = "the process's memory map is locked (a thread of it is in a long mmap, or in a page fault on a hung file system: look for a hung NFS or FUSE mount)"

// stuckError is the error of a read that did not answer, or was skipped; it matches ErrStuck.
type stuckError struct {
	path    string
	waited  time.Duration // this read waited this long without an answer (0 when skipped)
	pending string        // skipped: this earlier read of the same process has not answered...
	since   time.Duration // ...for this long
	busy    int           // skipped: this many reads of other processes have not answered
}

func (e *stuckError) Error() string {
	switch {
	case e.waited > 0:
		return fmt.Sprintf("reading %s: no answer within %v: %s", e.path, e.waited, lockedWhy)
	case e.pending != "":
		return fmt.Sprintf("reading %s: skipped: %s has not answered for %v: %s", e.path, e.pending,
			e.since.Round(time.Millisecond), lockedWhy)
	default:
		return fmt.Sprintf("reading %s: skipped: %d reads of other processes have not answered (the most tare leaves waiting at once): %s",
			e.path, e.busy, lockedWhy)
	}
}

func (e *stuckError) Is(target error) bool { return target == ErrStuck }

// BlockingReader reads files of /proc/PID whose read can block behind the process (cmdline, smaps_rollup)
// with a deadline, and remembers the processes that did not answer. It is safe for concurrent use.
type BlockingReader struct {
	root    string
	timeout time.Duration
	limit   int
	mu      sync.Mutex
	stuck   map[int]*pendingRead // PID -> the read of it that has not answered
	log     []stuckRead          // reads that did not answer, one entry per process and file, oldest first
	seq     int                  // stuck reads so far (numbers the log)
	dropped int                  // stuck reads not in the log because it was full
	skipped int                  // reads not tried because limit reads were stuck
}

// pendingRead is a read whose caller gave up: it stays in BlockingReader.stuck until it answers.
type pendingRead struct {
	path  string
	start time.Time
}

// stuckRead is what a BlockingReader remembers of the reads of one file of one process that did not answer.
type stuckRead struct {
	pid        int
	comm, name string
	times      int           // reads of this file that did not answer in time
	skips      int           // reads of it skipped because an earlier read of the process had not answered
	seq        int           // BlockingReader.seq at the last of them
	pending    *pendingRead  // the read that had not answered then
	answered   time.Duration // how long that one took to answer in the end (0: no answer yet)
}

// blockingReaders holds one reader per /proc root for the whole tare process. It is shared by every
// sampler and exec watcher on purpose: the threads it bounds belong to the process, and a process whose read
// is stuck should not be read again by the next sampler either.
var blockingReaders = struct {
	sync.Mutex
	byRoot map[string]*BlockingReader
}{byRoot: map[string]*BlockingReader{}}

// BlockingReads returns the shared reader of procRoot.
func BlockingReads(procRoot string) *BlockingReader {
	blockingReaders.Lock()
	defer blockingReaders.Unlock()
	r, ok := blockingReaders.byRoot[procRoot]
	if !ok {
		r = newBlockingReader(procRoot, BlockingReadTimeout, maxStuckReads)
		blockingReaders.byRoot[procRoot] = r
	}
	return r
}

func newBlockingReader(root string, timeout time.Duration, limit int) *BlockingReader {
	return &BlockingReader{root: root, timeout: timeout, limit: limit, stuck: map[int]*pendingRead{}}
}

// oneRecordFiles are the files read here that the kernel returns whole in one read (readRecord):
// cmdline's read copies until the buffer or the arguments end, smaps_rollup is one seq_file record. maps is
// not: its read stops at a page of records.
var oneRecordFiles = map[string]bool{"cmdline": true, "smaps_rollup": true}

type readResult struct {
	b   []byte
	err error
}

// read returns root/PID/name, up to 1 MiB, waiting at most the reader's timeout. A read that has not
// answered by then goes on in the background and read returns an error matching ErrStuck; until it
// answers, every read of that process fails at once with such an error. comm names the process in the
// limitations the reader reports ("" if unknown).
func (r *BlockingReader) read(pid int, comm, name string) ([]byte, error) {
	return r.readQuiet(pid, comm, name, false)
}

// readQuiet reads as read does when quiet is false. When it is true (the caller knows the process was
// Quiet at a stat reading and has not run since), it reads in the caller's goroutine, without the deadline:
// such a process cannot hold its memory map's lock, and the goroutine and timer cost as much CPU as the
// read itself (cmdline of a sleeper: 17 against 9 µs). A process with a read still stuck is skipped either
// way; the bound on reads left waiting does not hold back a quiet read, which cannot become one.
func (r *BlockingReader) readQuiet(pid int, comm, name string, quiet bool) ([]byte, error) {
	path := r.root + "/" + strconv.Itoa(pid) + "/" + name
	r.mu.Lock()
	if p, ok := r.stuck[pid]; ok {
		r.remember(pid, comm, name, p, false)
		r.mu.Unlock()
		return nil, &stuckError{path: path, pending: p.path, since: time.Since(p.start)}
	}
	if n := len(r.stuck); n >= r.limit && !quiet {
		r.skipped++
		r.mu.Unlock()
		return nil, &stuckError{path: path, busy: n}
	}
	r.mu.Unlock()
	if quiet {
		return readBlocking(path, oneRecordFiles[name])
	}
	p := &pendingRead{path: path, start: time.Now()}
	done := make(chan readResult, 1)
	go func() {
		b, err := readBlocking(path, oneRecordFiles[name])
		done <- readResult{b, err}
		r.answered(pid, p)
	}()
	timer := time.NewTimer(r.timeout)
	defer timer.Stop()
	select {
	case res := <-done:
		return res.b, res.err
	case <-timer.C:
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	select {
	case res := <-done: // answered while the lock was taken
		return res.b, res.err
	default:
	}
	r.stuck[pid] = p
	r.remember(pid, comm, name, p, true)
	return nil, &stuckError{path: path, waited: r.timeout}
}

// Read returns root/PID/name as read does, for readers outside this package of files that take the
// process's memory-map lock (tare profile's maps): with the reader's deadline, and the process remembered
// as stuck when it does not answer.
func (r *BlockingReader) Read(pid int, comm, name string) ([]byte, error) {
	return r.read(pid, comm, name)
}

// answered forgets a read that answered after its caller gave up, so that the process is read again.
func (r *BlockingReader) answered(pid int, p *pendingRead) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stuck[pid] != p {
		return // answered in time
	}
	delete(r.stuck, pid)
	for i := range r.log {
		if e := &r.log[i]; e.pid == pid && e.pending == p {
			e.answered = time.Since(p.start)
		}
	}
}

// remember logs a read of name that did not answer (timedOut) or was skipped because p had not answered.
// r.mu is held.
func (r *BlockingReader) remember(pid int, comm, name string, p *pendingRead, timedOut bool) {
	r.seq++
	var e *stuckRead
	for i := range r.log {
		if r.log[i].pid == pid && r.log[i].name == name {
			e = &r.log[i]
		}
	}
	if e == nil {
		if len(r.log) >= maxStuckLog {
			r.dropped++
			return
		}
		r.log = append(r.log, stuckRead{pid: pid, name: name})
		e = &r.log[len(r.log)-1]
	}
	e.seq, e.pending, e.answered = r.seq, p, 0
	if comm != "" {
		e.comm = comm
	}
	if timedOut {
		e.times++
	} else {
		e.skips++
	}
}

// Waiting returns how many reads have not answered yet.
func (r *BlockingReader) Waiting() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.stuck)
}

// TimedOut returns how many reads of pid's files waited out the deadline, as far as the reader remembers
// them (the maxStuckLog latest processes and files).
func (r *BlockingReader) TimedOut(pid int) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, e := range r.log {
		if e.pid == pid {
			n += e.times
		}
	}
	return n
}

// readBlocking reads a file with ordinary system calls, which tell the Go scheduler that the thread may
// block (see ReadBounded for the raw ones used for files that cannot).
func readBlocking(path string, oneRecord bool) ([]byte, error) {
	var fd int
	var err error
	for {
		if fd, err = unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0); !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	return readFull(fd, unix.Read, maxBlockingRead, path, oneRecord)
}

// StuckView is what one sampler reports of the shared reader: the reads that did not answer, and those that
// were skipped, since the view was taken. The zero value reports nothing.
type StuckView struct {
	r                     *BlockingReader
	seq, dropped, skipped int
}

// View starts a report of the reads that will not answer from now on.
func (r *BlockingReader) View() StuckView {
	r.mu.Lock()
	defer r.mu.Unlock()
	return StuckView{r: r, seq: r.seq, dropped: r.dropped, skipped: r.skipped}
}

// Limitations describes the reads that did not answer since the view was taken, one line per process and
// file, and says what the sampler reports instead.
func (v StuckView) Limitations() []string {
	if v.r == nil {
		return nil
	}
	r := v.r
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.log {
		if e.seq > v.seq {
			out = append(out, e.describe(r.root, r.timeout))
		}
	}
	if n := r.dropped - v.dropped; n > 0 {
		out = append(out, fmt.Sprintf("%d more reads of locked processes did not answer within %v", n, r.timeout))
	}
	if n := r.skipped - v.skipped; n > 0 {
		out = append(out, fmt.Sprintf("%d reads of command lines and smaps_rollup were skipped because %d earlier reads were still waiting on locked processes (the most tare leaves waiting at once)",
			n, r.limit))
	}
	return out
}

func (e stuckRead) describe(root string, timeout time.Duration) string {
	what := root + "/" + strconv.Itoa(e.pid) + "/" + e.name
	if e.comm != "" {
		what += " (" + e.comm + ")"
	}
	var failed []string
	if e.times > 0 {
		failed = append(failed, fmt.Sprintf("no answer within %v%s", timeout, timesSuffix(e.times)))
	}
	if e.skips > 0 {
		failed = append(failed, "skipped"+timesSuffix(e.skips)+" while an earlier read of the process had not answered")
	}
	var instead string
	switch e.name {
	case "cmdline":
		instead = "its command line is shown as [" + e.comm + "]"
	case "smaps_rollup":
		instead = "while it stays locked its RSS comes from statm, and its PSS and private memory are those of its last reading (0 if none)"
	default:
		instead = "its " + e.name + " is missing"
	}
	state := "no answer yet"
	if e.answered > 0 {
		state = "it answered after " + e.answered.Round(time.Millisecond).String()
	}
	return fmt.Sprintf("reading %s: %s: %s; %s; %s", what, strings.Join(failed, ", "), lockedWhy, instead, state)
}

func timesSuffix(n int) string {
	if n == 1 {
		return ""
	}
	return fmt.Sprintf(" (%d times)", n)
}
