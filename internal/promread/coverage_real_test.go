package promread_test

import (
	"strings"
	"testing"
	"time"

	"github.com/tare-dev/tare/internal/promread"
	"github.com/tare-dev/tare/internal/promread/promtest"
)

// TestReadCoverage: a real Prometheus that started a few seconds ago holds none of most of a 2-minute
// window, and the report says so for each node, with the time of its first sample, which must lie between
// this test starting Prometheus and now; a window its samples cover draws no such warning.
func TestReadCoverage(t *testing.T) {
	t.Parallel()
	began := time.Now()
	srv := promtest.StartScenario(t, promtest.TwoNodes)
	at := srv.WaitCovered(t, len(promtest.TwoNodes), window)
	covered, err := promread.Read(t.Context(), promread.Options{URL: srv.URL, Window: window, Time: at})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range covered.Warnings {
		if w.Code == promread.WarnPartialCoverage {
			t.Errorf("a covered window warns: %+v", w)
		}
	}
	long, err := promread.Read(t.Context(), promread.Options{URL: srv.URL, Window: 2 * time.Minute, Time: at})
	if err != nil {
		t.Fatal(err)
	}
	var named int
	for _, w := range long.Warnings {
		if w.Code != promread.WarnPartialCoverage {
			continue
		}
		node, rest, ok := strings.Cut(strings.TrimPrefix(w.Message, "node "), ": Prometheus holds its samples from ")
		if !ok || node != w.Subject {
			t.Errorf("a coverage warning that does not name its node first: %+v", w)
			continue
		}
		named++
		stamp, _, _ := strings.Cut(rest, " ")
		first, err := time.Parse(time.RFC3339, stamp)
		if err != nil || first.Before(began.Truncate(time.Second)) || first.After(at) {
			t.Errorf("node %s: first sample %q (%v), want between %v and %v", node, stamp, err, began, at)
		}
	}
	if named != len(promtest.TwoNodes) {
		t.Errorf("%d nodes named as not covering 2m, want %d: %+v", named, len(promtest.TwoNodes), long.Warnings)
	}
}
