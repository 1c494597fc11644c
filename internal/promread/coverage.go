package promread

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/tare-dev/tare/internal/warning"
)

// coverageWarnings names the nodes whose samples begin well inside the window (an agent deployed, or a
// Prometheus started, less than a window ago). Prometheus extrapolates a rate over the part of the window
// its samples cover only by half a scrape interval, so such a node's CPU reads short, by up to the
// uncovered share. A node is covered when its first sample in the window comes at most one and a half
// scrape intervals (estimated from the window's sample count) or one step of the First query after the
// window's start.
func coverageWarnings(r Results, at time.Time, window time.Duration) []warning.Warning {
	start := at.Add(-window)
	samples := map[string]float64{}
	for _, s := range r.Samples {
		samples[string(s.Metric["node"])] = float64(s.Value)
	}
	var out []warning.Warning
	for _, s := range r.First {
		node, v := string(s.Metric["node"]), float64(s.Value)
		if math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
			continue
		}
		first := time.Unix(0, int64(v*1e9))
		slack := time.Duration(coverageStep(window))
		if n := samples[node]; n >= 1 {
			slack = max(slack, time.Duration(1.5*float64(window)/n))
		}
		late := first.Sub(start)
		if late <= slack {
			continue
		}
		covered := at.Sub(first)
		out = append(out, warning.Warning{Code: WarnPartialCoverage, Figure: "busy_cores", Subject: node,
			Message: fmt.Sprintf("node %s: Prometheus holds its samples from %s only, %s of the %s window: "+
				"rates over it are extrapolated and its CPU may read up to %.0f%% short; give a --window of at most %s, or an --end later by %s",
				node, first.UTC().Format(time.RFC3339), model.Duration(covered.Round(time.Second)), model.Duration(window),
				100*float64(late)/float64(window), model.Duration(covered.Truncate(time.Second)), model.Duration(late.Round(time.Second))),
			Cause: "the node's agent was deployed, or Prometheus started, less than a window ago"})
	}
	slices.SortFunc(out, func(a, b warning.Warning) int { return strings.Compare(a.Message, b.Message) })
	return out
}
