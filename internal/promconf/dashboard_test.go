package promconf_test

import (
	"context"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tare-dev/tare/internal/promconf"
	"github.com/tare-dev/tare/internal/promread/promtest"
)

type dashboard struct {
	Title  string `json:"title"`
	UID    string `json:"uid"`
	Panels []struct {
		Title   string `json:"title"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
}

func readDashboard(t *testing.T) dashboard {
	t.Helper()
	b, err := promconf.Read(promconf.DashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s is not JSON: %v", promconf.DashboardFile, err)
	}
	return d
}

// metricNames are the series names an expression reads: tare's metrics and the shipped rules' records.
var metricNames = regexp.MustCompile(`\b(tare_[a-z_]+|[a-z_]+:tare_[a-z_]+:[a-z0-9]+|[a-z_]+:tare_[a-z_]+)\b`)

// TestDashboardReadsShippedSeries: every panel reads only series the agent exports or the shipped rules
// record, and the panels the dashboard promises are there.
func TestDashboardReadsShippedSeries(t *testing.T) {
	t.Parallel()
	d := readDashboard(t)
	rules, err := promconf.Read(promconf.RulesFile)
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{"tare_node_cpus": true, "tare_unattributed_cpu_cores": true, "tare_reconciliation_resolution_cores": true}
	for _, m := range regexp.MustCompile(`record: (\S+)`).FindAllStringSubmatch(string(rules), -1) {
		known[m[1]] = true
	}
	var titles []string
	for _, p := range d.Panels {
		titles = append(titles, p.Title)
		for _, tg := range p.Targets {
			for _, name := range metricNames.FindAllString(tg.Expr, -1) {
				if !known[name] {
					t.Errorf("panel %q reads %s, which neither the agent's contract nor rules.yml defines", p.Title, name)
				}
			}
		}
	}
	for _, want := range []string{"Node busy (cores)", "Overhead per node", "Control plane", "Top pods", "Memory by group"} {
		if !slices.ContainsFunc(titles, func(s string) bool { return strings.HasPrefix(s, want) }) {
			t.Errorf("no panel %q in %v", want, titles)
		}
	}
}

// TestDashboardQueriesRun sends every panel's query, with the node variable set to all nodes, to a real
// Prometheus that scrapes fake agents and runs the shipped rules: each must parse and return series.
func TestDashboardQueriesRun(t *testing.T) {
	t.Parallel()
	d := readDashboard(t)
	srv := promtest.StartScenario(t, promtest.TwoNodes)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			expr := strings.ReplaceAll(tg.Expr, "$node", ".*")
			for {
				n, err := srv.Count(ctx, expr, time.Now())
				if err == nil && n > 0 {
					break
				}
				if ctx.Err() != nil || (err != nil && strings.Contains(err.Error(), "bad_data")) {
					t.Fatalf("panel %q: %s returned %d series: %v", p.Title, expr, n, err)
				}
				time.Sleep(200 * time.Millisecond)
			}
		}
	}
}
