package cli

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/tare-dev/tare/internal/promread"
	"github.com/tare-dev/tare/internal/promread/promtest"
)

// TestReportPrometheus: tare report --prometheus reads back, from a real Prometheus, the rates at which two
// fake agents' counters advance (the ground truth of promtest.TwoNodes), within 5%.
func TestReportPrometheus(t *testing.T) {
	t.Parallel()
	srv := promtest.StartScenario(t, promtest.TwoNodes)
	covered := srv.WaitCovered(t, len(promtest.TwoNodes), 5*time.Second)
	// A window that ended a second ago (--end) reads the same steady rates.
	end := covered.Add(-time.Second).UTC().Format(time.RFC3339Nano)
	out, errOut, err := run(t.Context(), "report", "--prometheus", srv.URL, "--window", "3s", "--end", end, "-o", "json")
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	var past promread.Report
	if err := json.Unmarshal([]byte(out), &past); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if got := past.Time.Format(time.RFC3339Nano); got != end || len(past.Nodes) != 2 ||
		math.Abs(past.Nodes[0].BusyCores-promtest.TwoNodes[0].Busy) > 0.05*promtest.TwoNodes[0].Busy {
		t.Errorf("--end %s: report ends %s with nodes %+v; want n1 busy %.2f", end, got, past.Nodes, promtest.TwoNodes[0].Busy)
	}

	out, errOut, err = run(t.Context(), "report", "--prometheus", srv.URL, "--window", "5s", "-o", "json")
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	var rep promread.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(rep.Nodes) != 2 || rep.Nodes[0].Name != "n1" || rep.Nodes[1].Name != "n2" {
		t.Fatalf("nodes %+v; want n1 and n2", rep.Nodes)
	}
	near := func(what string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 0.05*want {
			t.Errorf("%s = %.4f; want %.4f ± 5%%", what, got, want)
		}
	}
	for i, n := range promtest.TwoNodes {
		near(n.Name+" busy cores", rep.Nodes[i].BusyCores, n.Busy)
		near(n.Name+" busy %", rep.Nodes[i].BusyPercent, 100*n.Busy/n.CPUs)
		for _, want := range n.Groups {
			found := false
			for _, g := range rep.Nodes[i].Groups {
				if g.Name == want.Name && g.Kind == want.Kind {
					near(n.Name+" "+g.Name, g.CPUCores, want.Cores)
					found = true
				}
			}
			if !found {
				t.Errorf("%s: group %s (%s) missing from %+v", n.Name, want.Name, want.Kind, rep.Nodes[i].Groups)
			}
		}
	}
	near("n1 tare", rep.Nodes[0].TareCores, 0.01)
	near("control plane (etcd 0.2 + kube-apiserver 0.12)", rep.Cluster.ControlPlaneCores, 0.32)
	if len(rep.Cluster.Pods) != 2 || rep.Cluster.Pods[0].Pod != "burner" || rep.Cluster.Pods[0].Namespace != "default" {
		t.Errorf("pods %+v; want default/burner first, then kube-system/coredns-1", rep.Cluster.Pods)
	}

	table, errOut, err := run(t.Context(), "report", "--prometheus", srv.URL, "--window", "5s", "--node", "n1", "--top", "2")
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	for _, want := range []string{"Prometheus " + srv.URL, "BUSY (cores)", "Busiest groups on n1", "burner", "etcd",
		"(4 more groups: -o json lists every one)", "Cluster (1 node)", "default/burner"} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
	t.Logf("tare report --prometheus --node n1 --top 2:\n%s", table)
	if strings.Contains(table, "n2") || errOut != "" {
		t.Errorf("--node n1 shows n2 or writes to stderr:\n%s\nstderr: %s", table, errOut)
	}
}

// TestReportPrometheusBadInput: usage errors exit 2; a Prometheus that does not answer, a server that is
// not Prometheus and a Prometheus without tare agents exit 1 with an error saying what to check.
func TestReportPrometheusBadInput(t *testing.T) {
	t.Parallel()
	closed, notProm, empty := promtest.BadTargets(t)

	for _, tc := range []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"file and prometheus", []string{"report", "x.db", "--prometheus", empty}, 2, []string{"not both"}},
		{"neither", []string{"report"}, 2, []string{"--prometheus URL"}},
		{"window without prometheus", []string{"report", "x.db", "--window", "5m"}, 2, []string{"give --prometheus"}},
		{"short window", []string{"report", "--prometheus", empty, "--window", "10ms"}, 2, []string{"--window"}},
		{"html", []string{"report", "--prometheus", empty, "--html", "x.html"}, 2, []string{"--html"}},
		{"bad end", []string{"report", "--prometheus", empty, "--end", "yesterday"}, 2, []string{"--end", "RFC 3339"}},
		{"future end", []string{"report", "--prometheus", empty, "--end", "2999-01-01T00:00:00Z"}, 2, []string{"in the future"}},
		{"end without prometheus", []string{"report", "x.db", "--end", "2026-01-01T00:00:00Z"}, 2, []string{"give --prometheus"}},
		{"unreachable", []string{"report", "--prometheus", closed}, 1, []string{closed, "does not answer", "/-/ready"}},
		{"not prometheus", []string{"report", "--prometheus", notProm}, 1, []string{notProm, "not answer like a Prometheus server"}},
		{"no agents", []string{"report", "--prometheus", empty}, 1, []string{empty, "no tare agent was scraped", "tare agent manifest"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			out, errOut, err := run(ctx, tc.args...)
			var ec ExitCoder
			code := 1
			if errors.As(err, &ec) {
				code = ec.ExitCode()
			}
			if err == nil || code != tc.code {
				t.Fatalf("%v: err %v (exit %d); want exit %d", tc.args, err, code, tc.code)
			}
			if out != "" {
				t.Errorf("stdout %q; want nothing", out)
			}
			for _, w := range tc.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr %q does not say %q", errOut, w)
				}
			}
		})
	}
}
