package kernel

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"
)

// CgroupV2Tasks is tare's exact task-time reference on cgroup v2. The root cgroup's own cpu.stat cannot
// serve: the kernel synthesises it from the same per-CPU tick counters /proc/stat prints (irq and softirq
// included). A child cgroup's usage_usec, on the other hand, is the scheduler's exact runtime of its tasks,
// with or without the cpu controller. So the reference is the sum of the top-level cgroups' usage_usec,
// plus the runtime of the tasks in the root cgroup itself (kernel threads, on a systemd host), read from
// each thread's /proc/TID/schedstat.
//
// Cost per reading: one getdents of the root directory, one pread per page of cgroup.threads, one pread
// per top-level cgroup and one pread per thread in the root cgroup, whose schedstat files stay open:
// about 1.2 µs per root-cgroup thread on the 2-core lab VM (BenchmarkCgroupV2Read in internal/sample), so 0.5 ms for the
// few hundred kernel threads of a systemd host. Without free file descriptors, a thread's file is opened
// and closed at each reading instead.
//
// What it misses: the runtime of a root-cgroup thread between its last reading and its exit (and the
// whole runtime of one that starts and ends between two readings); a top-level cgroup removed between
// readings loses what it ran since the last one. A thread moved into the root from a child cgroup is
// counted from its whole runtime, part of which its old cgroup already counted (systemd and container
// runtimes move tasks out of the root, not into it).
type CgroupV2Tasks struct {
	dir      string // the v2 hierarchy's root
	procRoot string
	threads  int    // the root's cgroup.threads, open
	listBuf  []byte // its last contents
	children map[string]*PinnedFile
	last     map[string]uint64 // top-level cgroup -> usage (ns) at the last reading
	notCg    map[string]bool   // names in the root that are files, not cgroups
	tasks    map[int]*rootTask
	total    uint64 // cumulative reference (ns)
	started  bool
	readings uint64
	buf      [256]byte
	// Usage is each top-level cgroup's usage (ns) at the last reading and RootThreads the number of
	// threads in the root cgroup then, for tests and diagnostics.
	Usage       map[string]uint64
	RootThreads int
	// Departed counts the threads that left the root cgroup (exited, or moved to a child) since the
	// reader opened, and DepartedPace sums what each ran in its last interval read: a rough measure of
	// the CPU exiting threads ran after their last reading, which the reference misses.
	Departed     int
	DepartedPace uint64
}

type rootTask struct {
	fd    int // open schedstat, -1 when it is opened at each reading
	last  uint64
	delta uint64 // runtime in the last interval read
	seen  uint64 // the reading that last listed it
}

// OpenCgroupV2Tasks prepares the reference for the v2 hierarchy rooted at dir. It fails when dir is not the
// root of a cgroup v2 hierarchy.
func OpenCgroupV2Tasks(dir, procRoot string) (*CgroupV2Tasks, error) {
	if err := IsCgroupV2Root(dir); err != nil {
		return nil, err
	}
	threads, err := rawOpen(filepath.Join(dir, "cgroup.threads"), unix.O_RDONLY)
	if err != nil {
		return nil, fmt.Errorf("opening %s/cgroup.threads: %w", dir, err)
	}
	return &CgroupV2Tasks{dir: dir, procRoot: procRoot, threads: threads, children: map[string]*PinnedFile{},
		last: map[string]uint64{}, notCg: map[string]bool{}, tasks: map[int]*rootTask{}, Usage: map[string]uint64{}, listBuf: make([]byte, 16<<10)}, nil
}

// IsCgroupV2Root checks that dir is the root of a cgroup v2 hierarchy: it has cgroup.controllers (only
// cgroup2 has it) and no cgroup.type (every cgroup but the root has one, so a cgroup namespace's view,
// whose top is some pod's cgroup, is refused: its total would be that pod's CPU, not the node's).
func IsCgroupV2Root(dir string) error {
	if _, err := ReadBounded(filepath.Join(dir, "cgroup.controllers")); err != nil {
		return fmt.Errorf("%s is not a cgroup v2 hierarchy (no cgroup.controllers): %w", dir, err)
	}
	if _, err := ReadBounded(filepath.Join(dir, "cgroup.type")); err == nil {
		return fmt.Errorf("%s is a cgroup, not the root of its hierarchy (tare in a cgroup namespace?): mount the host's cgroup2 root and pass it with --cgroup-root", dir)
	}
	return nil
}

// Read returns the cumulative reference in nanoseconds. The first reading sets the baseline: the usage of
// every top-level cgroup and the runtime of every root-cgroup thread so far.
func (c *CgroupV2Tasks) Read() (uint64, error) {
	var add uint64
	cg, err := c.readChildren()
	if err != nil {
		return c.total, err
	}
	add += cg
	th, err := c.readRootThreads()
	if err != nil {
		return c.total, err
	}
	add += th
	c.total += add
	c.started = true
	return c.total, nil
}

// readChildren adds what the top-level cgroups ran since the last reading.
func (c *CgroupV2Tasks) readChildren() (uint64, error) {
	names, err := ReadDirNames(c.dir)
	if err != nil {
		return 0, err
	}
	seen := make(map[string]bool, len(names))
	var add uint64
	for _, n := range names {
		if n == "." || n == ".." || c.notCg[n] {
			continue
		}
		f := c.children[n]
		isNew := f == nil
		if isNew {
			if f, err = OpenPinned(filepath.Join(c.dir, n, "cpu.stat")); err != nil {
				if errors.Is(err, unix.ENOTDIR) {
					c.notCg[n] = true
				}
				continue // a file, or a cgroup removed meanwhile
			}
			c.children[n] = f
		}
		b, err := f.Read()
		if err != nil {
			continue // removed since the listing: dropped below
		}
		v, err := ParseCgroupUsage("cpu.stat", b)
		if err != nil {
			return 0, fmt.Errorf("reading %s/%s/cpu.stat: %w: %w", c.dir, n, ErrMalformed, err)
		}
		seen[n] = true
		switch prev, ok := c.last[n]; {
		case !c.started:
			add += v // baseline
		case isNew || !ok || v < prev:
			add += v // created since the last reading (or removed and created again)
		default:
			add += v - prev
		}
		c.last[n] = v
	}
	for n, f := range c.children {
		if !seen[n] {
			f.Close()
			delete(c.children, n)
			delete(c.last, n)
		}
	}
	c.Usage = make(map[string]uint64, len(c.last))
	for n, v := range c.last {
		c.Usage[n] = v
	}
	return add, nil
}

// readRootThreads adds what the threads of the root cgroup ran since the last reading.
func (c *CgroupV2Tasks) readRootThreads() (uint64, error) {
	b, err := c.readThreadList()
	if err != nil {
		return 0, fmt.Errorf("reading %s/cgroup.threads: %w", c.dir, err)
	}
	tids, err := parseTIDList(b)
	if err != nil {
		return 0, fmt.Errorf("reading %s/cgroup.threads: %w", c.dir, err)
	}
	c.readings++
	var add uint64
	for _, tid := range tids {
		t := c.tasks[tid]
		isNew := t == nil
		if isNew {
			t = &rootTask{fd: -1}
			if fd, err := rawOpen(filepath.Join(c.procRoot, strconv.Itoa(tid), "schedstat"), unix.O_RDONLY); err == nil {
				t.fd = fd
			} else if !errors.Is(err, unix.EMFILE) && !errors.Is(err, unix.ENFILE) {
				continue // exited since the listing
			}
			c.tasks[tid] = t
		}
		t.seen = c.readings
		v, ok := c.readTask(tid, t)
		if !ok {
			c.dropTask(tid, t)
			continue
		}
		switch {
		case !c.started:
			add += v // baseline
		case isNew || v < t.last:
			add += v // born (or moved into the root) since the last reading; a smaller figure is a reused TID
			t.delta = v
		default:
			add += v - t.last
			t.delta = v - t.last
		}
		t.last = v
	}
	for tid, t := range c.tasks {
		if t.seen != c.readings {
			c.dropTask(tid, t)
		}
	}
	c.RootThreads = len(c.tasks)
	return add, nil
}

// readThreadList reads the whole of cgroup.threads. Unlike /proc/stat, it is a seq_file the kernel
// hands out one page at a time, so it takes a pread per page, each at the offset the last one ended; the
// read at offset 0 starts the listing afresh.
func (c *CgroupV2Tasks) readThreadList() ([]byte, error) {
	n := 0
	for {
		if n == len(c.listBuf) {
			if n >= 16<<20 {
				return nil, fmt.Errorf("%w: more than %d bytes", ErrMalformed, n)
			}
			c.listBuf = append(c.listBuf, make([]byte, n)...)
		}
		m, err := rawPreadAt(c.threads, c.listBuf[n:], int64(n))
		if err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return nil, err
		}
		if m == 0 {
			return c.listBuf[:n], nil
		}
		n += m
	}
}

// rawPreadAt is rawPread at an offset.
func rawPreadAt(fd int, buf []byte, off int64) (int, error) {
	n, _, e := unix.RawSyscall6(unix.SYS_PREAD64, uintptr(fd), uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)), uintptr(off), 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

func (c *CgroupV2Tasks) readTask(tid int, t *rootTask) (uint64, bool) {
	var n int
	var err error
	if t.fd >= 0 {
		n, err = rawPread(t.fd, c.buf[:])
	} else {
		var b []byte
		if b, err = readRecord(filepath.Join(c.procRoot, strconv.Itoa(tid), "schedstat")); err == nil {
			n = copy(c.buf[:], b)
		}
	}
	if err != nil || n == 0 {
		return 0, false
	}
	v, err := parseSchedstatRuntime(c.buf[:n])
	return v, err == nil
}

func (c *CgroupV2Tasks) dropTask(tid int, t *rootTask) {
	if t.fd >= 0 {
		rawClose(t.fd)
	}
	delete(c.tasks, tid)
	c.Departed++
	c.DepartedPace += t.delta
}

// Close releases the files the reference keeps open.
func (c *CgroupV2Tasks) Close() {
	rawClose(c.threads)
	for _, f := range c.children {
		f.Close()
	}
	for tid, t := range c.tasks {
		c.dropTask(tid, t)
	}
}

// RootUserProcesses counts the processes in the root cgroup other than kernel threads and tare itself. On a
// host whose init places services in cgroups (systemd) there are none, and the reference misses nothing
// that matters; each one is a process whose CPU after its last reading is lost if it exits.
func RootUserProcesses(dir, procRoot string) int {
	b, err := ReadBounded(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return 0
	}
	pids, err := parseTIDList(b)
	if err != nil {
		return 0
	}
	n, self := 0, os.Getpid()
	for _, pid := range pids {
		b, err := readRecord(filepath.Join(procRoot, strconv.Itoa(pid), "stat"))
		if err != nil {
			continue
		}
		if st, err := ParseProcStat(b); err == nil && !st.KernelThread() && pid != self {
			n++
		}
	}
	return n
}

// parseTIDList reads cgroup.threads or cgroup.procs: one decimal ID a line.
func parseTIDList(b []byte) ([]int, error) {
	ids := make([]int, 0, len(b)/6)
	v, digits := 0, 0
	for i, ch := range b {
		switch {
		case ch >= '0' && ch <= '9':
			if v > (1<<31)/10 {
				return nil, fmt.Errorf("%w: ID too large at byte %d", ErrMalformed, i)
			}
			v = v*10 + int(ch-'0')
			digits++
		case ch == '\n':
			if digits == 0 {
				return nil, fmt.Errorf("%w: empty line at byte %d", ErrMalformed, i)
			}
			ids = append(ids, v)
			v, digits = 0, 0
		default:
			return nil, fmt.Errorf("%w: unexpected %q at byte %d", ErrMalformed, ch, i)
		}
	}
	if digits > 0 {
		ids = append(ids, v)
	}
	return ids, nil
}
