package promtest

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
)

// Series is one series a fake agent exposes: a counter that starts at Start and grows by Rate every second
// of wall time, or a gauge (Rate 0, Gauge true) holding Start.
type Series struct {
	Name   string
	Labels string // in exposition syntax without braces: group="kubelet",group_kind="component"
	Start  float64
	Rate   float64
	Gauge  bool
}

// StartAgent serves series in the Prometheus text format at /metrics on a loopback port, computing each
// counter from the wall clock at the moment of the scrape, and returns the listener's host:port. The server
// closes at cleanup.
func StartAgent(t testing.TB, series []Series) string {
	t.Helper()
	begin := time.Now()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		elapsed := time.Since(begin).Seconds()
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprint(w, exposition(series, elapsed))
	}))
	t.Cleanup(srv.Close)
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

func exposition(series []Series, elapsed float64) string {
	var b strings.Builder
	typed := map[string]bool{}
	// The text format wants each family's lines together.
	series = slices.Clone(series)
	slices.SortStableFunc(series, func(a, b Series) int { return strings.Compare(a.Name, b.Name) })
	for _, s := range series {
		if !typed[s.Name] {
			kind := "counter"
			if s.Gauge {
				kind = "gauge"
			}
			fmt.Fprintf(&b, "# TYPE %s %s\n", s.Name, kind)
			typed[s.Name] = true
		}
		v := s.Start + s.Rate*elapsed
		if s.Labels == "" {
			fmt.Fprintf(&b, "%s %g\n", s.Name, v)
		} else {
			fmt.Fprintf(&b, "%s{%s} %g\n", s.Name, s.Labels, v)
		}
	}
	return b.String()
}
