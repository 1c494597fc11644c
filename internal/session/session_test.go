package session

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tare-dev/tare/internal/blockio"
	"github.com/tare-dev/tare/internal/record"
	"github.com/tare-dev/tare/internal/sample"
	"github.com/tare-dev/tare/internal/testenv"
)

// collector is a sink that remembers what it was given.
type collector struct {
	opened, closed *sample.Meta
	seqs           []int
	failAt         int // Keep fails on this sample (-1: never)
	afterKeep      func(sample.Sample)
}

var errFull = errors.New("disk full")

func newCollector() *collector { return &collector{failAt: -1} }

func (c *collector) Open(_ context.Context, m sample.Meta) error {
	c.opened = &m
	return nil
}

func (c *collector) Keep(_ context.Context, x sample.Sample) error {
	c.seqs = append(c.seqs, x.Seq)
	if x.Seq == c.failAt {
		return errFull
	}
	if c.afterKeep != nil {
		c.afterKeep(x)
	}
	return nil
}

func (c *collector) Close(_ context.Context, m sample.Meta) error {
	c.closed = &m
	return nil
}

func options(d time.Duration) Options {
	return Options{Sampler: sample.Options{Interval: 100 * time.Millisecond, Detail: 500 * time.Millisecond},
		Duration: d, Version: "v-test", Limitations: []string{"a caller's note"}}
}

func seqs(xs []sample.Sample) []int {
	out := make([]int, len(xs))
	for i, x := range xs {
		out[i] = x.Seq
	}
	return out
}

// TestSessionSinkFails: a real sampler over 1.5 s with three sinks, one of which fails on its fourth
// sample. The session measures on: every sample is in the result and reaches the other sinks, the failure
// is a warning attributed to that sample and SinkErr, not an error, and the failed sink is still closed.
func TestSessionSinkFails(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: counts samples over a timed window; runs in the pass without the race detector")
	}
	t.Parallel()
	failing, kept := newCollector(), newCollector()
	failing.failAt = 3
	db := filepath.Join(t.TempDir(), "s.db")
	var printed []Warning
	o := options(1500 * time.Millisecond)
	o.OnWarning = func(w Warning) { printed = append(printed, w) }
	res, err := Measure(context.Background(), o, failing, Recorder(db), kept)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(res.Samples); n < 6 || n > 17 {
		t.Errorf("%d samples over 1.5 s at 100 ms, want about 16 (fewer on a busy machine)", n)
	}
	if got := res.Samples[len(res.Samples)-1].Time.Sub(res.Samples[0].Time); got < 1400*time.Millisecond || got > 2*time.Second {
		t.Errorf("the window spans %s, want 1.5 s", got)
	}
	if !slices.Equal(kept.seqs, seqs(res.Samples)) {
		t.Errorf("the healthy sink got samples %v, the result holds %v", kept.seqs, seqs(res.Samples))
	}
	if !slices.Equal(failing.seqs, []int{0, 1, 2, 3}) {
		t.Errorf("the failing sink got samples %v, want 0 to 3 and none after its failure", failing.seqs)
	}
	if failing.closed == nil || kept.closed == nil {
		t.Errorf("sinks not closed: failing %v, healthy %v", failing.closed != nil, kept.closed != nil)
	}
	if !errors.Is(res.SinkErr, errFull) {
		t.Errorf("SinkErr = %v, want the sink's error", res.SinkErr)
	}
	want := Warning{Seq: 3, Kind: SinkFailed, Message: "disk full; measuring on without it"}
	if !slices.Contains(res.Warnings, want) || !slices.Equal(printed, res.Warnings) {
		t.Errorf("warnings %+v (printed %+v), want %+v among them", res.Warnings, printed, want)
	}
	m := res.Meta
	if m.TareVersion != "v-test" || m.Duration != o.Duration || !m.Started.Equal(res.Samples[0].Time) || m.Interrupted ||
		!slices.Contains(m.Limitations, "a caller's note") || m.Interval != o.Sampler.Interval {
		t.Errorf("final meta %+v", m)
	}
	if kept.opened == nil || kept.opened.TareVersion != "v-test" || kept.opened.Started.After(res.Samples[0].Time) {
		t.Errorf("meta at open %+v", kept.opened)
	}
	rec, err := record.Read(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(seqs(rec.Samples), seqs(res.Samples)) || !rec.Meta.Started.Equal(m.Started) {
		t.Errorf("recording holds samples %v from %s; the session took %v from %s", seqs(rec.Samples), rec.Meta.Started, seqs(res.Samples), m.Started)
	}
}

// TestSessionInterrupted: Ctrl-C (the context cancelled) in the middle of a 30 s window ends the session at
// once, without an error: the samples so far are returned, the metadata says the window was interrupted,
// and the recording is finished and holds the same samples.
func TestSessionInterrupted(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := newCollector()
	c.afterKeep = func(x sample.Sample) {
		if x.Seq == 5 {
			cancel()
		}
	}
	db := filepath.Join(t.TempDir(), "s.db")
	start := time.Now()
	res, err := Measure(ctx, options(30*time.Second), c, Recorder(db))
	if err != nil {
		t.Fatalf("interrupted session: %v", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the session took %s after Ctrl-C", took)
	}
	if n := len(res.Samples); n < 6 || n > 7 {
		t.Errorf("%d samples, want the 6 before Ctrl-C and at most a closing one", n)
	}
	if !res.Meta.Interrupted || res.SinkErr != nil {
		t.Errorf("interrupted = %v, sink error %v", res.Meta.Interrupted, res.SinkErr)
	}
	if c.closed == nil || !c.closed.Interrupted {
		t.Errorf("the sink was not closed with the interrupted meta: %+v", c.closed)
	}
	rec, err := record.Read(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	if !rec.Meta.Interrupted || !slices.Equal(seqs(rec.Samples), seqs(res.Samples)) {
		t.Errorf("recording: interrupted = %v, samples %v; the session took %v", rec.Meta.Interrupted, seqs(rec.Samples), seqs(res.Samples))
	}
}

// TestSessionSinkCannotOpen: a recording that cannot be created stops the session before it measures, and
// the sinks opened before it are closed.
func TestSessionSinkCannotOpen(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "exists.db")
	if err := os.WriteFile(db, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	c := newCollector()
	res, err := Measure(context.Background(), options(time.Minute), c, Recorder(db))
	if err == nil || len(res.Samples) > 0 {
		t.Fatalf("an existing recording file: err %v, %d samples", err, len(res.Samples))
	}
	if c.opened == nil || c.closed == nil || len(c.seqs) > 0 {
		t.Errorf("the sink before the recording: opened %v, closed %v, samples %v", c.opened != nil, c.closed != nil, c.seqs)
	}
}

// TestSessionOptions: a session without an interval or a window is an error, not a division by zero.
func TestSessionOptions(t *testing.T) {
	t.Parallel()
	for _, o := range []Options{{Duration: time.Second}, {Sampler: sample.Options{Interval: time.Second}}} {
		if _, err := Open(context.Background(), o); err == nil {
			t.Errorf("Open(%+v) succeeded", o)
		}
	}
}

// blockIOCollector is a collector that also keeps the window's block I/O.
type blockIOCollector struct {
	*collector
	io       []blockio.Snapshot
	ioClosed bool // whether the block I/O came after Close
	fail     error
}

func (c *blockIOCollector) KeepBlockIO(_ context.Context, snap blockio.Snapshot) error {
	c.io = append(c.io, snap)
	c.ioClosed = c.closed != nil
	return c.fail
}

// TestSessionBlockIOSink: with block I/O traced, a BlockIOSink gets the window's block I/O once, the
// result's, after the last sample and before Close; a sink that fails to keep it is the session's
// SinkErr and a warning, and a sink that had failed before gets none.
func TestSessionBlockIOSink(t *testing.T) {
	testenv.NeedRoot(t, "the block I/O tracer loads BPF programs")
	o := options(500 * time.Millisecond)
	o.BlockIO = true
	s, err := Open(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.BlockIO() == nil {
		testenv.Unavailable(t, "the block I/O tracer did not open: %v", s.warnings)
	}
	ok, failing, failedBefore := &blockIOCollector{collector: newCollector()}, &blockIOCollector{collector: newCollector(), fail: errFull},
		&blockIOCollector{collector: newCollector()}
	failedBefore.failAt = 1
	res, err := s.Run(context.Background(), ok, failing, failedBefore)
	if err != nil {
		t.Fatal(err)
	}
	if res.BlockIO == nil || len(ok.io) != 1 || ok.ioClosed || ok.closed == nil {
		t.Fatalf("result's block I/O %v; the sink got %d, after Close: %v", res.BlockIO != nil, len(ok.io), ok.ioClosed)
	}
	if diff := cmp.Diff(*res.BlockIO, ok.io[0]); diff != "" {
		t.Errorf("the sink's block I/O is not the result's (-result +sink):\n%s", diff)
	}
	failed := 0
	for _, w := range res.Warnings {
		if w.Kind == SinkFailed {
			failed++
		}
	}
	if len(failing.io) != 1 || !errors.Is(res.SinkErr, errFull) || len(failedBefore.io) != 0 || failed != 2 {
		t.Errorf("failing sink got %d, SinkErr %v, %d sink warnings (want 2); the sink failed before got %d", len(failing.io), res.SinkErr, failed, len(failedBefore.io))
	}
}
