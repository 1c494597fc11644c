package session

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tare-dev/tare/internal/blockio"
	"github.com/tare-dev/tare/internal/bpfstats"
	"github.com/tare-dev/tare/internal/sample"
)

// Options configure a session.
type Options struct {
	// Sampler configures the sampler. Its Interval is the session's too: the time between samples.
	Sampler sample.Options
	// Duration is the window.
	Duration time.Duration
	// Version is tare's version, written in the metadata.
	Version string
	// Limitations are the caller's notes, added to the sampler's in the metadata (pods shown by UID because
	// the API did not answer, say).
	Limitations []string
	// OnWarning, when set, is called with each warning as it arises, from the goroutine that opens or runs
	// the session: to print it. Every warning is also in Result.Warnings.
	OnWarning func(Warning)
	// BlockIO counts every process's block I/O over the window from the kernel's block tracepoints
	// (blockio), where BPF is allowed; where it is not, a warning says so and the window has /proc/PID/io's
	// bytes only.
	BlockIO bool
}

// Result is what a session measured.
type Result struct {
	// Samples are every sample taken, in order, the baseline first. A sink that failed does not lose any.
	Samples []sample.Sample
	// Meta is the final metadata: started at the first sample, Interrupted when the context was cancelled
	// before the window ended.
	Meta sample.Meta
	// Warnings are the session's warnings in the order they arose.
	Warnings []Warning
	// SinkErr joins the first error of each sink that failed (nil when all kept up): what it holds is
	// incomplete, the samples above are not.
	SinkErr error
	// BlockIO is the block I/O of the window, from just after the baseline to just after the closing
	// sample; nil unless Options.BlockIO and the tracer opened.
	BlockIO *blockio.Snapshot
}

// Session is an open sampler and the window it is to measure. It is not safe for concurrent use.
type Session struct {
	opts     Options
	smp      *sample.Sampler
	blockio  *blockio.Tracer // nil unless Options.BlockIO and BPF is allowed
	next     int             // the Seq of the sample being taken, for the warnings
	warnings []Warning
}

// Open opens every source the sampler can use on this host at this privilege level. The caller must Close
// the session.
func Open(ctx context.Context, o Options) (*Session, error) {
	if o.Sampler.Interval <= 0 || o.Duration <= 0 {
		return nil, fmt.Errorf("a session needs a positive interval and duration, got %s and %s", o.Sampler.Interval, o.Duration)
	}
	s := &Session{opts: o}
	if o.Sampler.BPFPrograms == nil {
		// s.blockio is set below, before the first sample.
		o.Sampler.BPFPrograms = func() []bpfstats.Program {
			if s.blockio == nil {
				return nil
			}
			return s.blockio.Programs()
		}
	}
	smp, err := sample.New(ctx, o.Sampler, func(msg string) { s.warn(s.next, Source, msg) })
	if err != nil {
		return nil, err
	}
	s.smp = smp
	if o.BlockIO {
		if s.blockio, err = blockio.Open(blockio.Options{}); err != nil {
			s.warn(0, Source, err.Error()+"; block I/O is /proc/PID/io's bytes only (no requests, no latency)")
		}
	}
	return s, nil
}

// Measure opens a session, runs it with sinks and closes it.
func Measure(ctx context.Context, o Options, sinks ...Sink) (Result, error) {
	s, err := Open(ctx, o)
	if err != nil {
		return Result{}, err
	}
	defer s.Close()
	return s.Run(ctx, sinks...)
}

// Close releases the sampler's files and sockets, and detaches the block I/O tracer.
func (s *Session) Close() {
	s.smp.Close()
	if s.blockio != nil {
		_ = s.blockio.Close()
	}
}

// Run measures the window, once per session: it samples every interval until the duration has passed or
// ctx is cancelled (Ctrl-C), and then takes a closing sample so that what came before is measured too.
// Every sample goes to each sink in the order given, and into the result.
//
// The error is for what stops a session before it measures: a sink that cannot open (an existing
// recording file) or a first sample that cannot be taken. A cancelled ctx is not an error: the result holds
// the samples so far, with Meta.Interrupted set. Sinks are closed in every case once opened; they receive
// samples and Close with a context that Ctrl-C does not cancel, so the closing sample is recorded too.
func (s *Session) Run(ctx context.Context, sinks ...Sink) (Result, error) {
	begin := s.meta(time.Now())
	for i, k := range sinks {
		if err := k.Open(ctx, begin); err != nil {
			for _, o := range sinks[:i] {
				_ = o.Close(context.WithoutCancel(ctx), begin)
			}
			return Result{Meta: begin, Warnings: s.warnings}, err
		}
	}
	keepCtx := context.WithoutCancel(ctx)
	failed := make([]error, len(sinks))
	var samples []sample.Sample
	var io0 *blockio.Snapshot
	keep := func(x sample.Sample) {
		samples = append(samples, x)
		if x.Seq == 0 {
			io0 = s.readBlockIO(x.Seq)
		}
		for i, k := range sinks {
			if failed[i] != nil {
				continue
			}
			if err := k.Keep(keepCtx, x); err != nil {
				failed[i] = err
				s.warn(x.Seq, SinkFailed, err.Error()+"; measuring on without it")
			}
		}
		s.next = x.Seq + 1
	}
	loopErr := sample.Loop(ctx, s.smp, s.opts.Duration, s.opts.Sampler.Interval, keep, func(msg string) { s.warn(s.next, Skipped, msg) })
	var io *blockio.Snapshot
	if io1 := s.readBlockIO(s.next - 1); io0 != nil && io1 != nil {
		d := io1.Sub(*io0)
		io = &d
	}
	final := begin
	if len(samples) > 0 {
		final = s.meta(samples[0].Time)
	}
	final.Interrupted = ctx.Err() != nil
	for i, k := range sinks {
		if b, ok := k.(BlockIOSink); ok && io != nil && failed[i] == nil {
			if err := b.KeepBlockIO(keepCtx, *io); err != nil {
				failed[i] = err
				s.warn(s.next-1, SinkFailed, err.Error())
			}
		}
		if err := k.Close(keepCtx, final); err != nil && failed[i] == nil {
			failed[i] = err
		}
	}
	res := Result{Meta: final, Warnings: s.warnings, SinkErr: errors.Join(failed...), BlockIO: io}
	if loopErr != nil {
		return res, loopErr
	}
	res.Samples = samples
	return res, nil
}

// BlockIO is the session's block I/O tracer, nil unless Options.BlockIO and BPF allowed it: a long-running
// caller (the agent) reads it as it streams.
func (s *Session) BlockIO() *blockio.Tracer { return s.blockio }

// readBlockIO reads the block I/O tracer; nil without one, or when the read fails (a warning says so).
func (s *Session) readBlockIO(seq int) *blockio.Snapshot {
	if s.blockio == nil {
		return nil
	}
	snap, err := s.blockio.Read()
	if err != nil {
		s.warn(seq, Source, "reading the block I/O tracer: "+err.Error())
		return nil
	}
	return &snap
}

// meta is the metadata as it stands: the sampler's grows as it meets files it cannot read.
func (s *Session) meta(started time.Time) sample.Meta {
	m := s.smp.Meta()
	m.TareVersion, m.Duration, m.Started = s.opts.Version, s.opts.Duration, started
	m.Limitations = append(m.Limitations, s.opts.Limitations...)
	return m
}

func (s *Session) warn(seq int, k Kind, msg string) {
	w := Warning{Seq: seq, Kind: k, Message: msg}
	s.warnings = append(s.warnings, w)
	if s.opts.OnWarning != nil {
		s.opts.OnWarning(w)
	}
}
