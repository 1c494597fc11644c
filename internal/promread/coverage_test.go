package promread

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
)

func vec(label string, values map[string]float64) model.Vector {
	var v model.Vector
	for node, x := range values {
		v = append(v, &model.Sample{Metric: model.Metric{model.LabelName(label): model.LabelValue(node)}, Value: model.SampleValue(x)})
	}
	return v
}

// TestCoverageWarnings: a node whose first sample comes a scrape after the window's start is covered; one
// that came 4 minutes into a 10-minute window is named, with what it covers and how to read it whole.
func TestCoverageWarnings(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	start := at.Add(-10 * time.Minute)
	r := Results{
		First: vec("node", map[string]float64{
			"a": float64(start.Add(14 * time.Second).Unix()),   // 15 s scrapes: within 1.5 intervals
			"b": float64(start.Add(4 * time.Minute).Unix()),    // deployed 6 minutes ago
			"c": float64(start.Add(-5 * time.Second).Unix())}), // a sample before the window's first step
		Samples: vec("node", map[string]float64{"a": 40, "b": 24, "c": 40}),
	}
	got := coverageWarnings(r, at, 10*time.Minute)
	if len(got) != 1 || got[0].Code != WarnPartialCoverage || got[0].Figure != "busy_cores" || got[0].Subject != "b" ||
		!strings.HasPrefix(got[0].Message, "node b: Prometheus holds its samples from 2026-11-23T11:54:00Z only, 6m of the 10m window") ||
		!strings.Contains(got[0].Message, "up to 40% short") || !strings.Contains(got[0].Message, "--window of at most 6m") {
		t.Errorf("warnings %+v, want one for node b", got)
	}
	if got := coverageWarnings(Results{}, at, time.Minute); len(got) != 0 {
		t.Errorf("no answers: %+v", got)
	}
}
