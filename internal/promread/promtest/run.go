package promtest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/tare-dev/tare/internal/promconf"
)

// Interval is the scrape and rule evaluation interval of StartScenario's Prometheus.
const Interval = time.Second

// StartScenario serves a fake agent for every node and a Prometheus that scrapes them with the shipped
// configuration (promconf.Static: the tare-agent job with static targets instead of Kubernetes discovery)
// and evaluates the shipped rules, every Interval.
func StartScenario(t testing.TB, nodes []Node) *Server {
	t.Helper()
	targets := make([]promconf.Target, 0, len(nodes))
	for _, n := range nodes {
		targets = append(targets, promconf.Target{Address: StartAgent(t, n.Series()), Labels: n.TargetLabels()})
	}
	cfg, err := promconf.Static(promconf.StaticOptions{Targets: targets, Interval: Interval})
	if err != nil {
		t.Fatal(err)
	}
	rules, err := promconf.Read(promconf.RulesFile)
	if err != nil {
		t.Fatal(err)
	}
	return Start(t, cfg, map[string][]byte{promconf.RulesFile: rules})
}

// WaitCovered waits until every node's samples cover window, so that a rate over it is not cut short by
// the scrapes that had not happened yet, and returns the moment it saw that.
func (s *Server) WaitCovered(t testing.TB, nodes int, window time.Duration) time.Time {
	t.Helper()
	want := int(window / Interval)
	q := fmt.Sprintf("count_over_time(tare_node_cpus[%ds]) >= %d", int(window.Seconds()), want)
	ctx, cancel := context.WithTimeout(t.Context(), window+30*time.Second)
	defer cancel()
	for {
		now := time.Now()
		if n, err := s.Count(ctx, q, now); err == nil && n == nodes {
			return now
		}
		select {
		case <-ctx.Done():
			t.Fatalf("prometheus did not hold %d scrapes of %d agents within %v", want, nodes, window+30*time.Second)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// WaitScrapedAfter waits until Prometheus holds a scrape of every node taken after at, so that a rate over
// a window ending at at has a sample past its end: without one, a scrape delayed on a busy machine makes
// Prometheus extrapolate only half an interval beyond the newest sample, and the rate reads short.
func (s *Server) WaitScrapedAfter(t testing.TB, nodes int, at time.Time) {
	t.Helper()
	q := fmt.Sprintf("timestamp(tare_node_cpus) > %.3f", float64(at.UnixMilli())/1000)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for {
		if n, err := s.Count(ctx, q, time.Now()); err == nil && n == nodes {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("prometheus holds no scrape of each of %d agents after %s within 30 s", nodes, at.Format(time.RFC3339Nano))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Count returns how many series the instant query expr returns at time at.
func (s *Server) Count(ctx context.Context, expr string, at time.Time) (int, error) {
	body, err := s.Raw(ctx, expr, at)
	if err != nil {
		return 0, err
	}
	var resp struct {
		Status string `json:"status"`
		Data   struct {
			Result []json.RawMessage `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &resp); err != nil {
		return 0, err
	}
	if resp.Status != "success" {
		return 0, fmt.Errorf("query %s: %s", expr, body)
	}
	return len(resp.Data.Result), nil
}

// Value returns the value of the instant query expr at time at, which must return one series.
func (s *Server) Value(ctx context.Context, expr string, at time.Time) (float64, error) {
	body, err := s.Raw(ctx, expr, at)
	if err != nil {
		return 0, err
	}
	var resp struct {
		Data struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &resp); err != nil {
		return 0, err
	}
	if len(resp.Data.Result) != 1 {
		return 0, fmt.Errorf("query %s returned %d series, want 1: %s", expr, len(resp.Data.Result), body)
	}
	v, ok := resp.Data.Result[0].Value[1].(string)
	if !ok {
		return 0, fmt.Errorf("query %s: value %v is not a string", expr, resp.Data.Result[0].Value[1])
	}
	return strconv.ParseFloat(v, 64)
}

// Raw returns the HTTP API's response body to the instant query expr at time at, as Prometheus sent it.
func (s *Server) Raw(ctx context.Context, expr string, at time.Time) ([]byte, error) {
	v := url.Values{"query": {expr}, "time": {strconv.FormatFloat(float64(at.UnixMilli())/1000, 'f', 3, 64)}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/api/v1/query?"+v.Encode(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return b, fmt.Errorf("query %s: HTTP %d: %s", expr, resp.StatusCode, b)
	}
	return b, nil
}

// TargetHealth lists the active scrape targets as Prometheus last saw them ("job instance: health, last
// error, last scrape's duration"), for a test's failure message: why a target is not up.
func (s *Server) TargetHealth(ctx context.Context) ([]string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/api/v1/targets?state=active", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var r struct {
		Data struct {
			ActiveTargets []struct {
				Labels             map[string]string `json:"labels"`
				Health             string            `json:"health"`
				LastError          string            `json:"lastError"`
				LastScrapeDuration float64           `json:"lastScrapeDuration"`
			} `json:"activeTargets"`
		} `json:"data"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(&r); err != nil {
		return nil, fmt.Errorf("targets: %w", err)
	}
	var out []string
	for _, t := range r.Data.ActiveTargets {
		out = append(out, fmt.Sprintf("%s %s: %s, %q, last scrape %.2f s", t.Labels["job"], t.Labels["instance"], t.Health, t.LastError, t.LastScrapeDuration))
	}
	return out, nil
}
