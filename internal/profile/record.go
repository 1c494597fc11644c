package profile

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tare-dev/tare/internal/kernel"
)

// Options configure a recording.
type Options struct {
	// ProcRoot is where procfs is mounted ("" is /proc).
	ProcRoot string
	// Frequency is samples per second per CPU.
	Frequency int
	// Duration is the window; a cancelled context ends it early.
	Duration time.Duration
	// CPUs is the number of CPUs to sample, 0..CPUs-1 (0: runtime.NumCPU()).
	CPUs int
	// OnSample, when set, is called with each sample and its process (nil for PID 0) as the sample is
	// drained, while the process likely still runs: to read the symbols of the binaries it hit
	// (Symbolizer.Prepare) before it may exit. It runs on Record's goroutine.
	OnSample func(RawSample, *Proc)
}

// Proc is what was read about a process when its first sample was drained: its identity (for its group)
// and its memory map (for its frames). A process that exited before then has neither.
type Proc struct {
	PID      int
	Identity kernel.Identity
	Maps     []Mapping
	Err      error // why Identity or Maps is missing
}

// Raw is a recording: the samples as the kernel wrote them and what was read about each process.
type Raw struct {
	Event     Event
	Frequency int
	CPUs      int
	Start     time.Time
	Elapsed   time.Duration
	Samples   []RawSample
	Procs     map[uint32]*Proc
	// Lost is the number of samples the kernel dropped because a ring buffer was full.
	Lost uint64
}

// drainEvery is how often the rings are read: often enough that processes are seen alive (their maps
// read), seldom enough to cost little.
const drainEvery = 100 * time.Millisecond

// Record samples every CPU for the window. Every perf descriptor and mapping is released before it returns,
// also when ctx is cancelled (which ends the window early and is not an error).
func Record(ctx context.Context, o Options) (*Raw, error) {
	if o.Frequency <= 0 || o.Frequency > 10000 {
		return nil, fmt.Errorf("frequency %d Hz is out of range: use 1 to 10000", o.Frequency)
	}
	o.ProcRoot = kernel.ProcRootOr(o.ProcRoot)
	if o.CPUs <= 0 {
		o.CPUs = runtime.NumCPU()
	}
	rings, ev, err := openRings(o)
	if err != nil {
		return nil, err
	}
	defer func() {
		for _, r := range rings {
			r.close()
		}
	}()
	raw := &Raw{Event: ev, Frequency: o.Frequency, CPUs: o.CPUs, Procs: map[uint32]*Proc{}, Start: time.Now()}
	for _, r := range rings {
		if err := unix.IoctlSetInt(r.fd, unix.PERF_EVENT_IOC_ENABLE, 0); err != nil {
			return nil, fmt.Errorf("enabling the perf event: %w", err)
		}
	}
	timer := time.NewTimer(o.Duration)
	defer timer.Stop()
	tick := time.NewTicker(drainEvery)
	defer tick.Stop()
	for done := false; !done; {
		select {
		case <-ctx.Done():
			done = true
		case <-timer.C:
			done = true
		case <-tick.C:
		}
		if done {
			for _, r := range rings {
				_ = unix.IoctlSetInt(r.fd, unix.PERF_EVENT_IOC_DISABLE, 0)
			}
			raw.Elapsed = time.Since(raw.Start)
		}
		for _, r := range rings {
			r.drain(raw.add(o.ProcRoot, o.OnSample))
		}
	}
	return raw, nil
}

// openRings opens one event and ring per CPU; on error it closes what it opened.
func openRings(o Options) ([]*ring, Event, error) {
	var rings []*ring
	fail := func(err error) ([]*ring, Event, error) {
		for _, r := range rings {
			r.close()
		}
		return nil, Event{}, err
	}
	ev, fd, err := chooseEvent(o.Frequency, 0, o.ProcRoot)
	if err != nil {
		return fail(err)
	}
	for cpu := 0; cpu < o.CPUs; cpu++ {
		if cpu > 0 {
			if fd, err = openCPU(ev, o.Frequency, cpu); err != nil {
				if errors.Is(err, unix.ENODEV) || errors.Is(err, unix.EINVAL) {
					continue // an offline CPU
				}
				return fail(openError(err, cpu, o.ProcRoot))
			}
		}
		r, err := newRing(fd)
		if err != nil {
			_ = unix.Close(fd)
			return fail(err)
		}
		rings = append(rings, r)
	}
	return rings, ev, nil
}

// add returns the function that keeps one drained record, reading a process's identity and maps at its
// first sample.
func (raw *Raw) add(procRoot string, onSample func(RawSample, *Proc)) func([]byte) {
	return func(rec []byte) {
		kind, s, lost, err := parseRecord(rec)
		if err != nil {
			return
		}
		switch kind {
		case recLost:
			raw.Lost += lost
		case recSample:
			if s.PID != 0 {
				if _, ok := raw.Procs[s.PID]; !ok {
					raw.Procs[s.PID] = readProc(procRoot, int(s.PID))
				}
			}
			if onSample != nil {
				onSample(s, raw.Procs[s.PID])
			}
			raw.Samples = append(raw.Samples, s)
		}
	}
}

func readProc(procRoot string, pid int) *Proc {
	p := &Proc{PID: pid}
	id, err := kernel.ReadIdentity(procRoot, pid)
	if err != nil {
		p.Err = err
		return p
	}
	p.Identity = id
	if !id.Kernel {
		p.Maps, p.Err = ReadMaps(procRoot, pid)
	}
	return p
}

// OwnCPU is the CPU this process has used so far, user and system, every thread (getrusage), or -1 when
// the kernel does not say. The difference of two readings is tare's own cost between them.
func OwnCPU() time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return -1
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
