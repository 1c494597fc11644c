package sample

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
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
	cgroup     *pinnedFile
	sysRoot    string
	cgroupFile string // root cgroup CPU usage file, "" if none
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
	for _, f := range []string{"fs/cgroup/cpuacct/cpuacct.usage", "fs/cgroup/cpu,cpuacct/cpuacct.usage", "fs/cgroup/cpu.stat"} {
		p := filepath.Join(sysRoot, f)
		if b, err := readBounded(p); err == nil {
			if _, err := parseCgroupUsage(filepath.Base(p), b); err == nil {
				if r.cgroup, err = openPinned(p); err == nil {
					r.cgroupFile = p
					break
				}
			}
		}
	}
	if r.cgroupFile == "" {
		r.Limitations = append(r.Limitations, "root cgroup CPU usage: no cpuacct.usage or cpu.stat under "+sysRoot+"/fs/cgroup; the task-time cross-check is skipped")
	}
	return r, nil
}

func psiHint(err error) error {
	if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%w (boot with psi=1 to enable)", ErrNotSupported)
	}
	return err
}

// CgroupSource names the file used for the task-time cross-check.
func (r *NodeReader) CgroupSource() string { return r.cgroupFile }

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

// TasksCPU reads the root cgroup's cumulative task time (ns), 0 if unavailable. The sampler reads it after
// the processes, so that its own work while sampling falls on the same side of both readings.
func (r *NodeReader) TasksCPU() uint64 {
	if r.cgroup == nil {
		return 0
	}
	b, err := r.cgroup.read()
	if err != nil {
		return 0
	}
	v, _ := parseCgroupUsage(filepath.Base(r.cgroupFile), b)
	return v
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
			return us * 1000, err
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
	buf := make([]byte, 0, 4096)
	for len(buf) < 1<<20 {
		n, err := rawRead(fd, buf[len(buf):cap(buf)])
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

// KernelConfig is what tare needs from the kernel's build configuration.
type KernelConfig struct {
	HZ                int  // CONFIG_HZ, the scheduler tick /proc/stat samples at (0 if unknown)
	IRQTimeAccounting bool // CONFIG_IRQ_TIME_ACCOUNTING: irq time is measured apart, not inside task time
}

// kernelConfig reads /proc/config.gz; a kernel without it gives the zero value.
func kernelConfig(procRoot string) KernelConfig {
	f, err := os.Open(filepath.Join(procRoot, "config.gz"))
	if err != nil {
		return KernelConfig{}
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return KernelConfig{}
	}
	b, err := io.ReadAll(io.LimitReader(zr, 4<<20))
	if err != nil {
		return KernelConfig{}
	}
	return KernelConfig{HZ: parseKernelHZ(b), IRQTimeAccounting: strings.Contains(string(b), "\nCONFIG_IRQ_TIME_ACCOUNTING=y")}
}

func parseKernelHZ(b []byte) int {
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "CONFIG_HZ="); ok {
			hz, _ := strconv.Atoi(strings.TrimSpace(v))
			return hz
		}
	}
	return 0
}

// Close releases the files the reader keeps open.
func (r *NodeReader) Close() {
	for _, f := range append([]*pinnedFile{r.stat, r.loadavg, r.cgroup}, mapValues(r.psi)...) {
		if f != nil {
			f.close()
		}
	}
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
			running, _ = strconv.Atoi(strings.TrimSpace(string(line[14:])))
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
