package bpfstats

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/tare-dev/tare/internal/kernel"
)

// ErrNotSupported means BPF run-time statistics cannot be turned on here: a process without CAP_SYS_ADMIN,
// or a kernel older than 5.8. The error wrapping it says which.
var ErrNotSupported = kernel.NotSupported("BPF run-time statistics unavailable")

// Enable turns on the kernel's BPF run-time statistics until the returned Closer is closed. They are
// machine-wide and reference counted: another holder (bpftool prog profile, sysctl
// kernel.bpf_stats_enabled) keeps them on after Close.
func Enable() (io.Closer, error) {
	c, err := ebpf.EnableStats(unix.BPF_STATS_RUN_TIME)
	switch {
	case err == nil:
		return c, nil
	case errors.Is(err, unix.EPERM), errors.Is(err, unix.EACCES):
		return nil, fmt.Errorf("%w: BPF_ENABLE_STATS: %w: needs CAP_SYS_ADMIN (run as root); without it tare's in-kernel BPF time is not reported", ErrNotSupported, err)
	case errors.Is(err, unix.EINVAL), errors.Is(err, ebpf.ErrNotSupported):
		return nil, fmt.Errorf("%w: BPF_ENABLE_STATS: %w: needs Linux 5.8 or later", ErrNotSupported, err)
	}
	return nil, fmt.Errorf("%w: BPF_ENABLE_STATS: %w", ErrNotSupported, err)
}

// Program is one of tare's loaded programs, named for reports.
type Program struct {
	Name string // "exectrace/process_exec", "blockio/rq_complete", ...
	// InSelf says the program runs in tare's own system calls (a task iterator read by tare), so its time is
	// already in tare's system time.
	InSelf bool
	Prog   *ebpf.Program
}

// Stat is one program's counters: cumulative from Read, over a window from Delta.
type Stat struct {
	Name     string        `json:"program"`
	InSelf   bool          `json:"in_self_cpu,omitempty"`
	RunTime  time.Duration `json:"run_time_ns"`
	RunCount uint64        `json:"run_count"`
}

// Read returns the counters of progs, sorted by name. The counters only move while statistics are
// enabled.
func Read(progs []Program) ([]Stat, error) {
	out := make([]Stat, 0, len(progs))
	for _, p := range progs {
		ps, err := p.Prog.Stats()
		if err != nil {
			return nil, fmt.Errorf("reading the run-time statistics of %s: %w", p.Name, err)
		}
		out = append(out, Stat{Name: p.Name, InSelf: p.InSelf, RunTime: ps.Runtime, RunCount: ps.RunCount})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Delta returns after minus before, program by program (matched by name); a program absent from before
// counts from zero, one absent from after is left out, and a counter that went back (a program reloaded
// under the same name) counts from zero.
func Delta(before, after []Stat) []Stat {
	prev := make(map[string]Stat, len(before))
	for _, s := range before {
		prev[s.Name] = s
	}
	out := make([]Stat, 0, len(after))
	for _, s := range after {
		b := prev[s.Name]
		if s.RunCount < b.RunCount || s.RunTime < b.RunTime {
			b = Stat{}
		}
		out = append(out, Stat{Name: s.Name, InSelf: s.InSelf, RunTime: s.RunTime - b.RunTime, RunCount: s.RunCount - b.RunCount})
	}
	return out
}

// Outside is the run time of the programs that run in other tasks (not InSelf): the part of tare's cost
// that its own user and system time leave out.
func Outside(stats []Stat) time.Duration {
	var d time.Duration
	for _, s := range stats {
		if !s.InSelf {
			d += s.RunTime
		}
	}
	return d
}
