package collect

import (
	"context"
	"errors"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/tare-dev/tare/internal/audit"
	"github.com/tare-dev/tare/internal/explain"
	"github.com/tare-dev/tare/internal/pprof"
	"github.com/tare-dev/tare/internal/record"
	"github.com/tare-dev/tare/internal/sample"
	"github.com/tare-dev/tare/internal/summary"
)

// Measure takes the window's samples live. It must return when ctx is cancelled.
type Measure func(ctx context.Context) ([]sample.Sample, sample.Meta, error)

// Result is a window and the evidence gathered around it.
type Result struct {
	Samples  []sample.Sample
	Meta     sample.Meta
	API      explain.API
	Profiles []pprof.Summary // sorted by CPU, most first
	Facts    *explain.ClusterFacts
	// ClusterRead says when Facts were read (nil without them): at the end of a live window, or now for
	// a recording.
	ClusterRead *explain.ClusterRead
	Notes       []string // what could not be read, and why
}

// factsTimeout bounds the reading of the cluster's facts after the window.
const factsTimeout = 15 * time.Second

// Collect takes the window, a recording's (Options.Recording) or a live one from measure, and gathers the
// evidence around it: CPU profiles over a live window, the audit log or the API server's request counters
// for it, and the cluster's facts. A source that fails becomes a note; only the window itself can fail
// Collect. When measure fails, the profiles still running are cancelled and Collect returns the error once
// every goroutine it started has returned.
func (s *Sources) Collect(ctx context.Context, measure Measure) (Result, error) {
	n := &notes{list: append([]string(nil), s.Notes...)}
	var res Result
	var before audit.RequestTotals
	if s.opts.Recording != "" {
		rec, err := record.Read(ctx, s.opts.Recording)
		if err != nil {
			return Result{}, err
		}
		res.Samples, res.Meta = rec.Samples, rec.Meta
	} else {
		if measure == nil {
			return Result{}, errors.New("explain: no recording and no live measurement to explain")
		}
		if s.Audit == "" && s.Cluster != nil {
			before = s.scrapeTotals(ctx, n)
		}
		var err error
		if res.Samples, res.Meta, res.Profiles, err = s.window(ctx, measure, n); err != nil {
			return Result{}, err
		}
	}
	// After the window: what the API saw over it, and the cluster as it is. Ctrl-C ended the window, not
	// the explanation of what was measured.
	after := context.WithoutCancel(ctx)
	var g errgroup.Group
	if len(res.Samples) > 0 {
		from, to := res.Samples[0].Time, res.Samples[len(res.Samples)-1].Time
		g.Go(func() error { res.API = s.apiView(after, n, before, from, to); return nil })
	}
	if s.Cluster != nil {
		g.Go(func() error {
			fctx, cancel := context.WithTimeout(after, factsTimeout)
			defer cancel()
			f := clusterFacts(fctx, s.Cluster)
			res.Facts = &f
			res.ClusterRead = explain.NewClusterRead(time.Now(), s.opts.Recording != "")
			for _, u := range f.Unreadable {
				n.add("cluster: " + u)
			}
			return nil
		})
	}
	_ = g.Wait() // the goroutines above report through notes, never an error
	res.Notes = n.list
	return res, nil
}

// window measures while profiling every target over the same time. The measurement's error cancels the
// profiles; a profile's failure is a note.
func (s *Sources) window(ctx context.Context, measure Measure, n *notes) ([]sample.Sample, sample.Meta, []pprof.Summary, error) {
	flameDir := s.flameDir(n)
	profiles := make([]*pprof.Summary, len(s.Targets))
	errs := make([]error, len(s.Targets))
	g, gctx := errgroup.WithContext(ctx)
	for i, t := range s.Targets {
		g.Go(func() error {
			profiles[i], errs[i] = takeProfile(gctx, t, s.opts.Duration, flameDir)
			return nil
		})
	}
	var samples []sample.Sample
	var meta sample.Meta
	g.Go(func() error {
		var err error
		samples, meta, err = measure(gctx)
		if err == nil && len(s.Targets) > 0 && s.opts.Progress != nil {
			s.opts.Progress("waiting for the profiles")
		}
		return err
	})
	if err := g.Wait(); err != nil {
		return nil, sample.Meta{}, nil, err
	}
	return samples, meta, sortProfiles(profiles, errs, n), nil
}

// Report analyses the result with its summary: explain's report, with the notes and when the cluster was
// read.
func (r Result) Report(sum summary.Summary) explain.Report {
	rep := explain.New(r.Samples, sum, r.API, r.Facts, r.Profiles)
	rep.ClusterRead = r.ClusterRead
	rep.Notes = append(rep.Notes, r.Notes...)
	return rep
}

// notes gathers what the sources could not read, from any goroutine.
type notes struct {
	mu   sync.Mutex
	list []string
}

func (n *notes) add(s string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.list = append(n.list, s)
}
