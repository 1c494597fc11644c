package sample

import (
	"context"
	"fmt"
	"time"
)

// Loop samples every interval until duration has passed since the first sample, or until ctx is
// cancelled: then it takes a closing sample, so what came before the interruption is measured too. keep
// receives every sample in order; a sample that fails is reported through warn and skipped. The error is
// only for a first sample that cannot be taken.
func Loop(ctx context.Context, s *Sampler, duration, interval time.Duration, keep func(Sample), warn func(string)) error {
	first, err := s.Sample()
	if err != nil {
		return fmt.Errorf("taking the first sample: %w", err)
	}
	keep(first)
	last := first.Time
	end := first.Time.Add(duration)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
		case <-tick.C:
		}
		// Checked after the select, which picks at random when a tick is also due (a slow sample): an
		// interruption must not cost another sample.
		if ctx.Err() != nil {
			if x, err := s.SampleFinal(); err == nil && x.Time.Sub(last) > interval/10 {
				keep(x)
			}
			return nil
		}
		final := !time.Now().Add(interval / 2).Before(end)
		take := s.Sample
		if final {
			take = s.SampleFinal
		}
		x, err := take()
		if err != nil {
			warn(err.Error())
			continue
		}
		keep(x)
		last = x.Time
		if final {
			return nil
		}
	}
}
