package kernel

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// CPUTimes holds the cumulative counters of the aggregate "cpu" line of /proc/stat, in seconds summed over
// all CPUs.
type CPUTimes struct {
	User, Nice, System, Idle, Iowait, IRQ, SoftIRQ, Steal, Guest, GuestNice float64
}

// Pressure is one /proc/pressure/RESOURCE "some" (and, where present, "full") total stall time in microseconds.
type Pressure struct {
	SomeTotalUs uint64 `json:"some_total_us"`
	FullTotalUs uint64 `json:"full_total_us"`
}

// NodeStat is one reading of the node-wide counters of /proc/stat, /proc/loadavg and /proc/pressure.
type NodeStat struct {
	CPU                  CPUTimes
	Running              int // procs_running
	Load1, Load5, Load15 float64
	// Pressure holds cpu, io and memory stall times; nil when the kernel lacks PSI.
	Pressure map[string]Pressure
	// At is when /proc/stat was read (the middle of the read), Spread how long the read took.
	At     time.Time
	Spread time.Duration
}

// NodeReader reads the node-wide counters under an injected /proc root. It keeps the files open and
// re-reads them with one pread each. It is not safe for concurrent use.
type NodeReader struct {
	procRoot string
	stat     *PinnedFile
	loadavg  *PinnedFile
	psi      map[string]*PinnedFile // resources whose PSI file is readable
	// Limitations lists what could not be read and why, for the report.
	Limitations []string
}

// NewNodeReader opens /proc/stat, /proc/loadavg and the PSI files under procRoot. It fails only when
// /proc/stat cannot be opened; the others it cannot read are named in Limitations.
func NewNodeReader(procRoot string) (*NodeReader, error) {
	stat, err := OpenPinned(filepath.Join(procRoot, "stat"))
	if err != nil {
		return nil, fmt.Errorf("opening %s/stat: %w", procRoot, err)
	}
	r := &NodeReader{procRoot: procRoot, stat: stat}
	if r.loadavg, err = OpenPinned(filepath.Join(procRoot, "loadavg")); err != nil {
		r.Limitations = append(r.Limitations, fmt.Sprintf("load average: %v", err))
	}
	r.psi = map[string]*PinnedFile{}
	for _, res := range []string{"cpu", "memory", "io"} {
		f, err := OpenPinned(filepath.Join(procRoot, "pressure", res))
		if err == nil {
			var b []byte
			if b, err = f.Read(); err == nil {
				_, err = parsePressure(b)
			}
			if err != nil {
				f.Close()
			}
		}
		if err != nil {
			r.Limitations = append(r.Limitations, fmt.Sprintf("pressure (PSI) for %s: %v", res, psiHint(err)))
			continue
		}
		r.psi[res] = f
	}
	return r, nil
}

func psiHint(err error) error {
	if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%w (boot with psi=1 to enable)", ErrNotSupported)
	}
	return err
}

// ReadStat reads /proc/stat alone, and when: At is the middle of the read and Spread its length, so that a
// reader preempted while reading (a busy node) knows how far At can be from the instant the kernel
// summed the counters.
func (r *NodeReader) ReadStat() (NodeStat, error) {
	t0 := time.Now()
	b, err := r.stat.Read()
	t1 := time.Now()
	if err != nil {
		return NodeStat{}, fmt.Errorf("reading %s/stat: %w", r.procRoot, err)
	}
	cpu, running, err := parseProcStatCPU(b)
	if err != nil {
		return NodeStat{}, fmt.Errorf("reading %s/stat: %w", r.procRoot, err)
	}
	return NodeStat{CPU: cpu, Running: running, At: t0.Add(t1.Sub(t0) / 2), Spread: t1.Sub(t0)}, nil
}

// ReadSlow reads the load average and pressure into n.
func (r *NodeReader) ReadSlow(n *NodeStat) {
	if r.loadavg != nil {
		if b, err := r.loadavg.Read(); err == nil {
			n.Load1, n.Load5, n.Load15, _ = parseLoadavg(b)
		}
	}
	for res, f := range r.psi {
		b, err := f.Read()
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
}

// Close releases the files the reader keeps open.
func (r *NodeReader) Close() {
	for _, f := range append([]*PinnedFile{r.stat, r.loadavg}, mapValues(r.psi)...) {
		if f != nil {
			f.Close()
		}
	}
}

func mapValues(m map[string]*PinnedFile) []*PinnedFile {
	out := make([]*PinnedFile, 0, len(m))
	for _, f := range m {
		out = append(out, f)
	}
	return out
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

// parseProcStatCPU reads the aggregate "cpu" line (USER_HZ ticks, returned in seconds) and procs_running
// from /proc/stat, skipping the per-CPU and interrupt lines procfs would parse.
func parseProcStatCPU(b []byte) (CPUTimes, int, error) {
	var c CPUTimes
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
				v[i] = float64(x) / UserHZ
			}
			c = CPUTimes{v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9]}
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
