package agent

import (
	"errors"
	"fmt"
	"time"

	"github.com/tare-dev/tare/internal/sample"
	"github.com/tare-dev/tare/internal/summary"
)

// errNoSample is /summary before the first sample.
var errNoSample = errors.New("no sample yet: the agent is taking its first")

// windowError is a window /summary cannot serve: the caller's mistake (400).
type windowError struct{ msg string }

func (e windowError) Error() string { return e.msg }

// parseWindow reads /summary's window parameter: "" is the ring's whole span.
func (s *state) parseWindow(q string, interval time.Duration) (time.Duration, error) {
	span := time.Duration(len(s.ring)-1) * interval
	if q == "" {
		return span, nil
	}
	d, err := time.ParseDuration(q)
	switch {
	case err != nil:
		return 0, windowError{fmt.Sprintf("window %q: %v: give a duration such as 60s or 5m", q, err)}
	case d < interval:
		return 0, windowError{fmt.Sprintf("window %s is shorter than the %s interval: give at least one interval", d, interval)}
	case d > span:
		return 0, windowError{fmt.Sprintf("window %s is longer than the %s the agent keeps (--window): give at most %s", d, span, span)}
	}
	return d, nil
}

// summarize builds the summary of the trailing window d, the way tare measure builds its own.
func (s *state) summarize(d time.Duration, top int) (summary.Summary, error) {
	meta, samples, err := s.series(d)
	if err != nil {
		return summary.Summary{}, err
	}
	return summary.Build(meta, samples, summary.Options{Top: top}), nil
}

// series copies the trailing window d out of the ring as the series summary.Build takes: samples numbered
// from 0 (the window's baseline), each process's identity in the New list of the sample it was first
// seen in (or the baseline, for those already there), its sequence numbers counted from the baseline.
// Rows are shared with the ring, which never changes a sample it holds.
func (s *state) series(d time.Duration) (sample.Meta, []sample.Sample, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.n == 0 {
		return sample.Meta{}, nil, errNoSample
	}
	last := s.at(s.n - 1)
	from := s.n - 1
	for from > 0 && !s.at(from-1).Time.Before(last.Time.Add(-d-s.meta.Interval/2)) {
		from--
	}
	out := make([]sample.Sample, s.n-from)
	for i := range out {
		out[i] = *s.at(from + i)
		out[i].Seq = i
	}
	base, end := out[0], out[len(out)-1]
	base.Seq = s.at(from).Seq
	for _, p := range s.procs {
		if p.exitSeq != 0 && p.exitSeq <= base.Seq {
			continue
		}
		info := p.info
		info.FirstSeq = max(info.FirstSeq-base.Seq, 0)
		if info.FirstSeq >= len(out) {
			continue
		}
		info.BornSeq = max(info.BornSeq-base.Seq, 0)
		info.ExitSeq = 0 // set from the Exited lists by summary.Build
		out[info.FirstSeq].New = append(out[info.FirstSeq].New, info)
	}
	meta := s.meta
	meta.Started, meta.Duration = base.Time, end.Time.Sub(base.Time)
	meta.Interrupted = false
	return meta, out, nil
}
