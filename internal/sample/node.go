package sample

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// NodeReader reads node-wide counters under an injected /proc and /sys root.
type NodeReader struct {
	procRoot   string
	stat       *pinnedFile
	loadavg    *pinnedFile
	psi        map[string]*pinnedFile // resources whose PSI file is readable
	sysRoot    string
	ref        Reference      // what TasksCPU counts
	cgroup     *pinnedFile    // v1: the root's cpuacct.usage
	v2         *cgroupV2Tasks // v2: the top-level cgroups and the root's threads
	cgroupFile string         // the v1 file or v2 hierarchy TasksCPU reads, "" if none
	// Limitations lists what could not be read and why, for the report.
	Limitations []string
}

// NewNodeReader probes which node sources this kernel offers.
func NewNodeReader(procRoot, sysRoot string) (*NodeReader, error) {
	stat, err := openPinned(filepath.Join(procRoot, "stat"))
	if err != nil {
		return nil, fmt.Errorf("opening %s/stat: %w", procRoot, err)
	}
	r := &NodeReader{procRoot: procRoot, sysRoot: sysRoot, stat: stat}
	if r.loadavg, err = openPinned(filepath.Join(procRoot, "loadavg")); err != nil {
		r.Limitations = append(r.Limitations, fmt.Sprintf("load average: %v", err))
	}
	r.psi = map[string]*pinnedFile{}
	for _, res := range []string{"cpu", "memory", "io"} {
		f, err := openPinned(filepath.Join(procRoot, "pressure", res))
		if err == nil {
			var b []byte
			if b, err = f.read(); err == nil {
				_, err = parsePressure(b)
			}
			if err != nil {
				f.close()
			}
		}
		if err != nil {
			r.Limitations = append(r.Limitations, fmt.Sprintf("pressure (PSI) for %s: %v", res, psiHint(err)))
			continue
		}
		r.psi[res] = f
	}
	r.detectCgroup()
	return r, nil
}

func psiHint(err error) error {
	if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%w (boot with psi=1 to enable)", ErrNotSupported)
	}
	return err
}

// detectCgroup picks the node's task-time reference under the sys root: a cgroup v2 hierarchy mounted at
// fs/cgroup, else the v1 cpuacct hierarchy, else the v2 hierarchy a hybrid host mounts at
// fs/cgroup/unified; without any, node busy comes from /proc/stat.
func (r *NodeReader) detectCgroup() {
	cg := filepath.Join(r.sysRoot, "fs", "cgroup")
	var errs []string
	for _, dir := range []string{cg, filepath.Join(cg, "cpuacct"), filepath.Join(cg, "cpu,cpuacct"), filepath.Join(cg, "unified")} {
		err := r.UseCgroupRoot(dir)
		if err == nil {
			return
		}
		if !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err.Error())
		}
	}
	why := "no cgroup v2 root, v1 cpuacct or hybrid v2 hierarchy under " + cg
	if len(errs) > 0 {
		why = strings.Join(errs, "; ")
	}
	r.Limitations = append(r.Limitations, limitNoTaskTime+why+"; node busy comes from /proc/stat (tick-sampled), pass --cgroup-root to name a hierarchy")
}

// The beginnings of the limitations about the node's reference.
const (
	limitNoTaskTime = "node task time: "
	limitV2Root     = "cgroup v2 reference: "
)

// UseCgroupRoot makes the cgroup hierarchy rooted at dir the node's task-time reference: the root of a
// cgroup v2 hierarchy (any controllers, or none), or of a v1 hierarchy with the cpuacct controller. The
// error wraps os.ErrNotExist when dir is neither.
func (r *NodeReader) UseCgroupRoot(dir string) error {
	var v1 *pinnedFile
	v2, err := openCgroupV2Tasks(dir, r.procRoot)
	if err != nil {
		if _, statErr := readBounded(filepath.Join(dir, "cgroup.controllers")); statErr == nil {
			return err // a cgroup v2 hierarchy tare cannot use: say why
		}
		p := filepath.Join(dir, "cpuacct.usage")
		b, err := readBounded(p)
		if err != nil {
			return fmt.Errorf("%s is neither a cgroup v2 root (no cgroup.controllers) nor a v1 cpuacct root: %w", dir, err)
		}
		if _, err := parseCgroupUsage("cpuacct.usage", b); err != nil {
			return fmt.Errorf("reading %s: %w: %w", p, ErrMalformed, err)
		}
		if v1, err = openPinned(p); err != nil {
			return fmt.Errorf("opening %s: %w", p, err)
		}
	}
	r.closeCgroup()
	r.Limitations = slices.DeleteFunc(r.Limitations, func(l string) bool { // about the reference replaced
		return strings.HasPrefix(l, limitNoTaskTime) || strings.HasPrefix(l, limitV2Root)
	})
	if v2 != nil {
		r.v2, r.ref, r.cgroupFile = v2, RefCgroupV2, dir
		if n := rootUserProcesses(dir, r.procRoot); n > 0 {
			r.Limitations = append(r.Limitations, fmt.Sprintf(limitV2Root+"%d processes besides kernel threads live in the root cgroup of %s "+
				"(an init that does not place services in cgroups): what they run after their last reading before they exit, and all "+
				"of those that start and end between samples, is missed, so node busy may read low", n, dir))
		}
		return nil
	}
	r.cgroup, r.ref, r.cgroupFile = v1, RefCgroupV1, filepath.Join(dir, "cpuacct.usage")
	return nil
}

// CgroupSource names the file (v1) or hierarchy (v2) the task time is read from, "" if none.
func (r *NodeReader) CgroupSource() string { return r.cgroupFile }

// Reference says what TasksCPU counts: RefCgroupV1, RefCgroupV2, or RefProcStat when it reads nothing.
func (r *NodeReader) Reference() Reference {
	if r.ref == "" {
		return RefProcStat
	}
	return r.ref
}

// Read takes one node reading. /proc/stat is read every time; with full unset, the load average, pressure
// and cgroup usage (cumulative or slowly moving figures) are carried over from prev instead of read again.
func (r *NodeReader) Read(full bool, prev Node) (Node, error) {
	b, err := r.stat.read()
	if err != nil {
		return Node{}, fmt.Errorf("reading %s/stat: %w", r.procRoot, err)
	}
	cpu, running, err := parseProcStatCPU(b)
	if err != nil {
		return Node{}, fmt.Errorf("reading %s/stat: %w", r.procRoot, err)
	}
	if !full {
		prev.CPU, prev.Running = cpu, running
		return prev, nil
	}
	n := Node{CPU: cpu, Running: running}
	if b, err := r.loadavg.read(); err == nil {
		n.Load1, n.Load5, n.Load15, _ = parseLoadavg(b)
	}
	for res, f := range r.psi {
		b, err := f.read()
		if err != nil {
			continue
		}
		if p, err := parsePressure(b); err == nil {
			if n.Pressure == nil {
				n.Pressure = make(map[string]Pressure, len(r.psi))
			}
			n.Pressure[res] = p
		}
	}
	return n, nil
}

// TasksCPU reads the node's cumulative task time (ns) from its reference, 0 if unavailable. The sampler
// reads it after the processes, so that its own work while sampling falls on the same side of both
// readings. On cgroup v2 each call also reads every thread of the root cgroup (see cgroupV2Tasks).
func (r *NodeReader) TasksCPU() uint64 {
	switch {
	case r.v2 != nil:
		v, err := r.v2.read()
		if err != nil {
			return 0
		}
		return v
	case r.cgroup != nil:
		b, err := r.cgroup.read()
		if err != nil {
			return 0
		}
		v, _ := parseCgroupUsage("cpuacct.usage", b)
		return v
	}
	return 0
}

// parseLoadavg reads the three load averages from /proc/loadavg.
func parseLoadavg(b []byte) (l1, l5, l15 float64, err error) {
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return 0, 0, 0, fmt.Errorf("loadavg: %d fields", len(f))
	}
	var errs [3]error
	l1, errs[0] = strconv.ParseFloat(f[0], 64)
	l5, errs[1] = strconv.ParseFloat(f[1], 64)
	l15, errs[2] = strconv.ParseFloat(f[2], 64)
	return l1, l5, l15, errors.Join(errs[:]...)
}

// parsePressure reads the "total=" stall times (µs) of the some and full lines of /proc/pressure/RESOURCE.
func parsePressure(b []byte) (Pressure, error) {
	var p Pressure
	found := false
	for _, line := range strings.Split(string(b), "\n") {
		kind, rest, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		_, total, ok := strings.Cut(rest, "total=")
		if !ok {
			continue
		}
		v, err := strconv.ParseUint(strings.TrimSpace(total), 10, 64)
		if err != nil {
			return p, fmt.Errorf("pressure %s total: %w", kind, err)
		}
		switch kind {
		case "some":
			p.SomeTotalUs, found = v, true
		case "full":
			p.FullTotalUs = v
		}
	}
	if !found {
		return p, fmt.Errorf("pressure: no some line")
	}
	return p, nil
}

// parseCgroupUsage reads cumulative CPU in ns from cgroup v1 cpuacct.usage or v2 cpu.stat (usage_usec).
func parseCgroupUsage(name string, b []byte) (uint64, error) {
	if name == "cpuacct.usage" {
		return strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), " ")
		if ok && k == "usage_usec" {
			us, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("%s usage_usec: %w", name, err)
			}
			if us > math.MaxUint64/1000 {
				return 0, fmt.Errorf("%s: usage_usec %d overflows nanoseconds", name, us)
			}
			return us * 1000, nil
		}
	}
	return 0, fmt.Errorf("%s: no usage_usec line", name)
}

// readBounded reads a pseudo-file whose stat size cannot be trusted, up to 1 MiB. It uses raw system
// calls: os.Open would also register every /proc file with the network poller (two fcntl and an epoll_ctl
// per file), and see rawPread for why the scheduler is not told.
func readBounded(path string) ([]byte, error) {
	fd, err := rawOpen(path, unix.O_RDONLY)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer rawClose(fd)
	return readFull(fd, rawRead, 1<<20, path)
}

// readFull reads fd to its end (or limit bytes) with read, growing the buffer to fit: the one loop behind
// readBounded (raw system calls) and readBlocking (ordinary ones, for files that can block).
func readFull(fd int, read func(int, []byte) (int, error), limit int, path string) ([]byte, error) {
	buf := make([]byte, 0, 4096)
	for len(buf) < limit {
		n, err := read(fd, buf[len(buf):cap(buf)])
		if err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return nil, &os.PathError{Op: "read", Path: path, Err: err}
		}
		if n == 0 {
			break
		}
		buf = buf[:len(buf)+n]
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
	}
	return buf, nil
}

// Close releases the files the reader keeps open.
func (r *NodeReader) Close() {
	for _, f := range append([]*pinnedFile{r.stat, r.loadavg}, mapValues(r.psi)...) {
		if f != nil {
			f.close()
		}
	}
	r.closeCgroup()
}

func (r *NodeReader) closeCgroup() {
	if r.cgroup != nil {
		r.cgroup.close()
		r.cgroup = nil
	}
	if r.v2 != nil {
		r.v2.close()
		r.v2 = nil
	}
	r.ref, r.cgroupFile = "", ""
}

func mapValues(m map[string]*pinnedFile) []*pinnedFile {
	out := make([]*pinnedFile, 0, len(m))
	for _, f := range m {
		out = append(out, f)
	}
	return out
}

// pinnedFile is a pseudo-file kept open and re-read from offset 0 each time, into a buffer that grows to
// fit: one pread per reading instead of open, read and close.
type pinnedFile struct {
	fd  int
	buf []byte
}

func openPinned(path string) (*pinnedFile, error) {
	fd, err := rawOpen(path, unix.O_RDONLY)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return &pinnedFile{fd: fd, buf: make([]byte, 16<<10)}, nil
}

func (p *pinnedFile) read() ([]byte, error) {
	for {
		n, err := rawPread(p.fd, p.buf)
		if err != nil {
			return nil, err
		}
		if n < len(p.buf) || len(p.buf) >= 4<<20 {
			return p.buf[:n], nil
		}
		p.buf = make([]byte, 2*len(p.buf)) // the file did not fit: read it again whole
	}
}

func (p *pinnedFile) close() {
	rawClose(p.fd)
}

// parseProcStatCPU reads the aggregate "cpu" line (USER_HZ ticks, returned in seconds) and procs_running
// from /proc/stat, skipping the per-CPU and interrupt lines procfs would parse.
func parseProcStatCPU(b []byte) (NodeCPU, int, error) {
	var c NodeCPU
	running, found := 0, false
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		switch {
		case bytes.HasPrefix(line, []byte("cpu ")):
			f := strings.Fields(string(line[4:]))
			if len(f) < 8 {
				return c, 0, fmt.Errorf("cpu line has %d fields", len(f))
			}
			v := make([]float64, 10)
			for i := 0; i < len(f) && i < 10; i++ {
				x, err := strconv.ParseUint(f[i], 10, 64)
				if err != nil {
					return c, 0, fmt.Errorf("cpu line: %w", err)
				}
				v[i] = float64(x) / userHZ
			}
			c = NodeCPU{v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9]}
			found = true
		case bytes.HasPrefix(line, []byte("procs_running ")):
			if n, err := strconv.ParseUint(strings.TrimSpace(string(line[14:])), 10, 31); err == nil {
				running = int(n)
			}
		}
	}
	if !found {
		return c, 0, fmt.Errorf("no cpu line")
	}
	return c, running, nil
}

// readDirNames lists a directory with raw system calls (see readBounded for why not os.Open).
func readDirNames(path string) ([]string, error) {
	fd, err := rawOpen(path, unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer rawClose(fd)
	buf := make([]byte, 32<<10)
	var names []string
	for {
		n, err := rawGetdents(fd, buf)
		if err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return nil, &os.PathError{Op: "getdents", Path: path, Err: err}
		}
		if n <= 0 {
			return names, nil
		}
		_, _, names = unix.ParseDirent(buf[:n], -1, names)
	}
}
