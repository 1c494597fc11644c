package session

import (
	"context"
	"time"

	"github.com/tare-dev/tare/internal/sample"
)

// forever is the window of a stream: a session that ends only when its context is cancelled.
const forever = 100 * 365 * 24 * time.Hour

// Stream samples every interval until ctx is cancelled, with no end of window, and keeps nothing: keep
// receives each sample, in order, with the metadata as it stands after it (the sampler's limitations grow
// as it meets files it cannot read). It is for a long-running caller (tare agent) that bounds what it keeps
// itself. Warnings go to Options.OnWarning and are not kept either. keep is called from the goroutine that
// calls Stream, and must not call the session.
//
// The error is for a first sample that cannot be taken; a cancelled ctx ends the stream with nil after a
// closing sample.
func (s *Session) Stream(ctx context.Context, keep func(sample.Sample, sample.Meta)) error {
	var started time.Time
	each := func(x sample.Sample) {
		if x.Seq == 0 {
			started = x.Time
		}
		s.next = x.Seq + 1
		s.warnings = nil
		keep(x, s.meta(started))
	}
	err := sample.Loop(ctx, s.smp, forever, s.opts.Sampler.Interval, each, func(msg string) { s.warn(s.next, Skipped, msg) })
	s.warnings = nil
	return err
}
