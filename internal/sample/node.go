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

	"github.com/prometheus/procfs"
	"golang.org/x/sys/unix"
)

// NodeReader reads node-wide counters under an injected /proc and /sys root.
type NodeReader struct {
	fs         procfs.FS
	sysRoot    string
	psi        []string // resources whose PSI file is readable
	cgroupFile string   // root cgroup CPU usage file, "" if none
	// Limitations lists what could not be read and why, for the report.
	Limitations []string
}

// NewNodeReader probes which node sources this kernel offers.
func NewNodeReader(procRoot, sysRoot string) (*NodeReader, error) {
	fs, err := procfs.NewFS(procRoot)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", procRoot, err)
	}
	r := &NodeReader{fs: fs, sysRoot: sysRoot}
	for _, res := range []string{"cpu", "memory", "io"} {
		if _, err := fs.PSIStatsForResource(res); err != nil {
			r.Limitations = append(r.Limitations, fmt.Sprintf("pressure (PSI) for %s: %v", res, psiHint(err)))
			continue
		}
		r.psi = append(r.psi, res)
	}
	for _, f := range []string{"fs/cgroup/cpuacct/cpuacct.usage", "fs/cgroup/cpu,cpuacct/cpuacct.usage", "fs/cgroup/cpu.stat"} {
		p := filepath.Join(sysRoot, f)
		if b, err := readBounded(p); err == nil {
			if _, err := parseCgroupUsage(filepath.Base(p), b); err == nil {
				r.cgroupFile = p
				break
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

// Read takes one node reading.
func (r *NodeReader) Read() (Node, error) {
	st, err := r.fs.Stat()
	if err != nil {
		return Node{}, fmt.Errorf("reading /proc/stat: %w", err)
	}
	c := st.CPUTotal
	n := Node{
		CPU:     NodeCPU{c.User, c.Nice, c.System, c.Idle, c.Iowait, c.IRQ, c.SoftIRQ, c.Steal, c.Guest, c.GuestNice},
		Running: int(st.ProcessesRunning),
	}
	if la, err := r.fs.LoadAvg(); err == nil {
		n.Load1, n.Load5, n.Load15 = la.Load1, la.Load5, la.Load15
	}
	for _, res := range r.psi {
		ps, err := r.fs.PSIStatsForResource(res)
		if err != nil {
			continue
		}
		if n.Pressure == nil {
			n.Pressure = map[string]Pressure{}
		}
		var p Pressure
		if ps.Some != nil {
			p.SomeTotalUs = ps.Some.Total
		}
		if ps.Full != nil {
			p.FullTotalUs = ps.Full.Total
		}
		n.Pressure[res] = p
	}
	if r.cgroupFile != "" {
		if b, err := readBounded(r.cgroupFile); err == nil {
			n.TasksCPUNs, _ = parseCgroupUsage(filepath.Base(r.cgroupFile), b)
		}
	}
	return n, nil
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

// readBounded reads a pseudo-file whose stat size cannot be trusted, up to 1 MiB.
func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, 0, 4096)
	for len(buf) < 1<<20 {
		n, err := f.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err != nil || n == 0 {
			break
		}
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
	}
	return buf, nil
}

// kernelHZ reads CONFIG_HZ, the scheduler tick /proc/stat samples at, from /proc/config.gz (0 if unknown).
func kernelHZ(procRoot string) int {
	f, err := os.Open(filepath.Join(procRoot, "config.gz"))
	if err != nil {
		return 0
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return 0
	}
	b, err := io.ReadAll(io.LimitReader(zr, 4<<20))
	if err != nil {
		return 0
	}
	return parseKernelHZ(b)
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
