package session

import (
	"context"
	"fmt"

	"github.com/tare-dev/tare/internal/blockio"
	"github.com/tare-dev/tare/internal/progress"
	"github.com/tare-dev/tare/internal/record"
	"github.com/tare-dev/tare/internal/sample"
)

// Sink receives a session's samples as they are taken. The session calls Open once before the first
// sample, Keep with every sample in order, and Close once after the last, all from the goroutine that runs
// the session. After Keep fails the sink receives no more samples, but is still closed.
type Sink interface {
	// Open gets the metadata as it stands before the first sample. An error stops the session before it
	// measures anything.
	Open(ctx context.Context, meta sample.Meta) error
	// Keep takes one sample. An error drops the sink for the rest of the window.
	Keep(ctx context.Context, x sample.Sample) error
	// Close gets the final metadata: the start is the first sample's time, and Interrupted and the
	// limitations are settled.
	Close(ctx context.Context, meta sample.Meta) error
}

// BlockIOSink is a Sink that also keeps the window's block I/O: when the session traced it
// (Options.BlockIO and the tracer opened), it calls KeepBlockIO once, after the last sample and before
// Close, with what Result.BlockIO holds. An error counts as the sink's failure.
type BlockIOSink interface {
	Sink
	KeepBlockIO(ctx context.Context, snap blockio.Snapshot) error
}

// Recording is a sink that writes every sample to a new recording file (record.Writer). Each sample is
// committed as it arrives, so a failure later leaves the file with every sample before it.
type Recording struct {
	path string
	w    *record.Writer
}

// Recorder is a sink writing to path, which must not exist yet.
func Recorder(path string) *Recording { return &Recording{path: path} }

// Open creates the file.
func (r *Recording) Open(ctx context.Context, meta sample.Meta) error {
	w, err := record.Create(ctx, r.path, meta)
	if err != nil {
		return err
	}
	r.w = w
	return nil
}

// Keep commits one sample.
func (r *Recording) Keep(ctx context.Context, x sample.Sample) error { return r.w.Append(ctx, x) }

// KeepBlockIO stores the window's block I/O in the file.
func (r *Recording) KeepBlockIO(ctx context.Context, snap blockio.Snapshot) error {
	return r.w.WriteBlockIO(ctx, snap)
}

// Close stores the final metadata and closes the file.
func (r *Recording) Close(ctx context.Context, meta sample.Meta) error {
	if r.w == nil {
		return nil
	}
	if err := r.w.Finish(ctx, meta); err != nil {
		return fmt.Errorf("finishing recording %s: %w", r.path, err)
	}
	return nil
}

// statusLine is the live status line as a sink.
type statusLine struct {
	line  *progress.Line
	label string
}

// Progress is a sink that shows the window on a terminal's status line, named label, from Open to Close.
// A nil line shows nothing.
func Progress(line *progress.Line, label string) Sink { return statusLine{line: line, label: label} }

func (l statusLine) Open(_ context.Context, meta sample.Meta) error {
	l.line.Measuring(meta)
	l.line.Start(l.label, meta.Duration)
	return nil
}

func (l statusLine) Keep(_ context.Context, x sample.Sample) error {
	l.line.Observe(x)
	return nil
}

func (l statusLine) Close(context.Context, sample.Meta) error {
	l.line.Done()
	return nil
}
