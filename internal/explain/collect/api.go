package collect

import (
	"context"
	"time"

	"github.com/tare-dev/tare/internal/audit"
	"github.com/tare-dev/tare/internal/explain"
)

// apiView reads the audit log for the window, or, without one, the API server's request counters: before
// is their scrape at the start of a live window (nil for a recording, which has no such scrape).
func (s *Sources) apiView(ctx context.Context, n *notes, before audit.RequestTotals, from, to time.Time) explain.API {
	if s.Audit != "" {
		rep, err := audit.File(ctx, s.Audit, audit.Options{From: from, To: to.Add(time.Second)})
		if err != nil {
			return explain.API{Missing: err.Error()}
		}
		return explain.API{Audit: rep}
	}
	api := explain.API{Missing: "no audit log: " + audit.EnableHint}
	if before != nil {
		if after := s.scrapeTotals(ctx, n); after != nil {
			m := audit.Delta(before, after, to.Sub(from).Minutes())
			api.Metrics = &m
		}
	}
	return api
}

// scrapeTotals reads kube-apiserver's request counters; nil (and a note) when they cannot be read.
func (s *Sources) scrapeTotals(ctx context.Context, n *notes) audit.RequestTotals {
	body, err := s.Cluster.Metrics(ctx)
	if err != nil {
		n.add(err.Error())
		return nil
	}
	defer body.Close()
	t, err := audit.ParseRequestTotals(body)
	if err != nil {
		n.add(err.Error())
	}
	return t
}
