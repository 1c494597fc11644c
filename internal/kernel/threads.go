package kernel

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// ThreadCounters reads a process's CPU cheaply and precisely: it keeps /proc/PID/task/TID/schedstat open for
// every thread and reads each with one pread per sample (about 1 µs, against 7 µs for a taskstats query
// and 5 µs for /proc/PID/stat). An open file stays bound to its task, so a reused PID can never be mistaken
// for the old process. Threads that exit leave their last reading in carry, so the total never goes back;
// their CPU after that reading, and threads born since the last scan, are picked up at the next resync
// (Rescan, and with taskstats an exact thread-group total). It is not safe for concurrent use.
type ThreadCounters struct {
	dir   string         // /proc/PID/task
	fds   map[int]int    // tid -> open schedstat
	last  map[int]uint64 // tid -> last sum_exec_runtime
	carry uint64         // runtime of threads that exited
	buf   [128]byte
}

// ErrFDLimit means tare could not keep more files open; the caller falls back to an uncached source.
var ErrFDLimit = errors.New("open file limit reached")

// Open is the number of threads whose schedstat files are open.
func (t *ThreadCounters) Open() int { return len(t.fds) }

// OpenThreads opens the schedstat file of every thread of pid under procRoot. It fails with ErrFDLimit when
// no more files can be opened, and with an error matching ErrGone when the process has exited.
func OpenThreads(procRoot string, pid int) (*ThreadCounters, error) {
	t := &ThreadCounters{dir: filepath.Join(procRoot, strconv.Itoa(pid), "task"), fds: map[int]int{}, last: map[int]uint64{}}
	if err := t.Rescan(false); err != nil {
		t.Close()
		return nil, err
	}
	return t, nil
}

// Rescan opens threads born since the last scan. With counted unset their whole runtime counts from now
// on: they did not exist at the previous scan, so none of it was counted before. With counted set, their
// runtime so far is taken as already counted (it is inside an exact total just folded in by Resync).
func (t *ThreadCounters) Rescan(counted bool) error {
	names, err := ReadDirNames(t.dir)
	if err != nil {
		return gone(0, err)
	}
	for _, n := range names {
		tid, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		if _, ok := t.fds[tid]; ok {
			continue
		}
		fd, err := unix.Open(filepath.Join(t.dir, n, "schedstat"), unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			if errors.Is(err, unix.EMFILE) || errors.Is(err, unix.ENFILE) {
				return ErrFDLimit
			}
			continue // the thread exited meanwhile
		}
		t.fds[tid] = fd
		t.last[tid] = 0
		if counted {
			if n, err := rawPread(fd, t.buf[:]); err == nil && n > 0 {
				if v, err := parseSchedstatRuntime(t.buf[:n]); err == nil {
					t.last[tid] = v
					t.carry -= min(t.carry, v)
				}
			}
		}
	}
	return nil
}

// Total returns the cumulative runtime (ns) of the thread group as far as the open threads tell. mainGone
// reports that the thread group leader has exited (the process is gone, or its PID was reused).
func (t *ThreadCounters) Total(pid int) (total uint64, mainGone bool) {
	for tid, fd := range t.fds {
		n, err := rawPread(fd, t.buf[:])
		if err != nil || n == 0 {
			if tid == pid {
				mainGone = true
			}
			t.carry += t.last[tid]
			unix.Close(fd)
			delete(t.fds, tid)
			delete(t.last, tid)
			continue
		}
		if v, err := parseSchedstatRuntime(t.buf[:n]); err == nil && v >= t.last[tid] {
			t.last[tid] = v
		}
	}
	total = t.carry
	for _, v := range t.last {
		total += v
	}
	return total, mainGone
}

// Resync raises the total to an exact thread-group figure (taskstats), folding in threads that exited
// since their last reading.
func (t *ThreadCounters) Resync(exact, current uint64) {
	if exact > current {
		t.carry += exact - current
	}
}

// Close closes every thread file.
func (t *ThreadCounters) Close() {
	for _, fd := range t.fds {
		unix.Close(fd)
	}
	t.fds = nil
}

// parseSchedstatRuntime returns the first field of a schedstat line: time on CPU in nanoseconds.
func parseSchedstatRuntime(b []byte) (uint64, error) {
	if i := bytes.IndexByte(b, ' '); i > 0 {
		b = b[:i]
	}
	var v uint64
	if len(b) == 0 {
		return 0, fmt.Errorf("empty schedstat")
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("schedstat: unexpected %q", b)
		}
		d := uint64(c - '0')
		if v > (math.MaxUint64-d)/10 {
			return 0, fmt.Errorf("schedstat: %q overflows 64 bits", b)
		}
		v = v*10 + d
	}
	return v, nil
}
