package cli

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/tare-dev/tare/internal/cluster"
	"github.com/tare-dev/tare/internal/deploy"
	"github.com/tare-dev/tare/internal/promconf"
	"github.com/tare-dev/tare/internal/promread"
	"github.com/tare-dev/tare/internal/promread/promtest"
	"github.com/tare-dev/tare/internal/testload"
)

// checkPrometheusOnLab is the Prometheus leg of TestAgentsOnThreeNodeLab. A real Prometheus (upstream: Debian's
// lacks Kubernetes service discovery) runs the shipped scrape job and rules from outside the cluster, through
// the lab's kubeconfig, and must find the three agents by itself. Then the cluster view and tare report
// --prometheus, over the same window, must agree on every node's busy CPU within the view's stated
// resolution and on the burner within 5%, and the burner must be within 5% of its own cgroup in Prometheus,
// on node 2 only. The planted secret must not reach Prometheus.
func checkPrometheusOnLab(ctx context.Context, t *testing.T, prometheus, kc string, agents map[string]*corev1.Pod, usage func() time.Duration) {
	t.Helper()
	// As a user would: the shipped files, adapted to a Prometheus outside the cluster.
	dir := t.TempDir()
	// Prometheus presents a token of an account bound to the metrics reader's role.
	token := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(token, []byte(accountToken(ctx, t, clientsetOf(t, kc), "tare-test-prometheus", deploy.MetricsReaderRole)), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, errOut, err := run(ctx, "agent", "prometheus", "--dir", dir, "--kubeconfig", kc, "--token-file", token,
		"--interval", promtest.Interval.String()); err != nil {
		t.Fatalf("agent prometheus: %v\n%s", err, errOut)
	}
	files := map[string][]byte{}
	for _, name := range promconf.Files() {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		files[name] = b
	}
	srv := promtest.StartBinary(t, prometheus, files[promconf.ConfigFile], files)
	trace := testload.TraceUsage(usage)
	defer trace.Stop()
	// cluster measure reads the agents' last 20 s; Prometheus must have scraped every agent all along it (a
	// rate over a window its samples do not cover is extrapolated short).
	const span = 20 * time.Second
	srv.WaitCovered(t, len(agents), span+3*time.Second)

	// Discovery labels each agent's series with its pod; the agent labels them with its node (downward API).
	info := promSeries(ctx, t, srv, "tare_agent_info")
	if len(info) != len(agents) {
		t.Errorf("tare_agent_info: %d series %v, want one per agent (%d)", len(info), info, len(agents))
	}
	for _, l := range info {
		a := agents[l["node"]]
		if a == nil || l["pod"] != a.Name || l["namespace"] != deploy.DefaultNamespace || l["job"] != promconf.JobName {
			t.Errorf("tare_agent_info %v: want node, pod and namespace of one of the agents", l)
		}
	}
	if raw, err := srv.Raw(ctx, `{job="`+promconf.JobName+`"}`, time.Now()); err != nil || strings.Contains(string(raw), plantedSecret) {
		t.Errorf("reading every tare series from Prometheus: %v; or the planted secret is in them", err)
	}

	out, errOut, err := run(ctx, "cluster", "measure", "--kubeconfig", kc, "--duration", span.String(), "-o", "json")
	if err != nil {
		t.Fatalf("cluster measure: %v\n%s", err, errOut)
	}
	var v cluster.View
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("cluster measure -o json: %v\n%s", err, out)
	}
	// Every window's end must lie between two scrapes of every agent: the query waits for the scrape after it.
	var last time.Time
	for _, n := range v.Nodes {
		if end := n.Start.Add(time.Duration(n.Seconds * float64(time.Second))); end.After(last) {
			last = end
		}
	}
	srv.WaitScrapedAfter(t, len(agents), last.Add(promtest.Interval))
	for _, n := range v.Nodes {
		if n.Status != cluster.StatusOK {
			t.Errorf("node %s: %s: %s", n.Name, n.Status, n.Reason)
			continue
		}
		// The same window, read back from Prometheus.
		span := time.Duration(n.Seconds * float64(time.Second)).Round(time.Millisecond)
		end := n.Start.Add(span)
		rep := reportPrometheus(ctx, t, srv.URL, n.Name, span, end)
		if len(rep.Nodes) != 1 {
			t.Errorf("report --prometheus --node %s: nodes %+v", n.Name, rep.Nodes)
			continue
		}
		// Prometheus stamps a scrape with its start, and an agent's counters are those of its last sample:
		// the two windows' edges may differ by a sample interval and a scrape interval. The means may then
		// differ by what the busiest interval adds at each edge, beyond the view's own resolution.
		edge := 2 * (n.Busy.Max - n.Busy.Mean) * (time.Second + promtest.Interval).Seconds() / n.Seconds
		got, want := 1000*rep.Nodes[0].BusyCores, n.Busy.Mean
		t.Logf("%s: busy %.1fm in Prometheus, %.1fm in the cluster view over %.1f s (resolution ±%.1fm, edges ±%.1fm)",
			n.Name, got, want, n.Seconds, n.Resolution, edge)
		if math.Abs(got-want) > n.Resolution+edge {
			t.Errorf("%s: report --prometheus says busy %.1fm, the cluster view %.1fm: want within ±%.1fm", n.Name, got, want, n.Resolution+edge)
		}
		var viewBurner float64
		for _, g := range n.Groups {
			if g.Name == "pod default/burner" {
				viewBurner = g.CPU.Mean
			}
		}
		var promBurner float64
		for _, p := range rep.Cluster.Pods {
			if p.Namespace == "default" && p.Pod == "burner" {
				promBurner = 1000 * p.CPUCores
			}
		}
		if n.Name != "tare-node-2" {
			if promBurner != 0 {
				t.Errorf("%s has node 2's burner in Prometheus (%.1fm)", n.Name, promBurner)
			}
			continue
		}
		truth, traced := trace.Between(end.Add(-span), end)
		if !traced {
			t.Fatalf("the burner's cgroup trace does not cover %s's window", n.Name)
		}
		t.Logf("%s: burner %.1fm in Prometheus, %.1fm in the cluster view, %.1fm by its cgroup", n.Name, promBurner, viewBurner, truth)
		for what, got := range map[string]float64{"Prometheus": promBurner, "the cluster view": viewBurner} {
			if math.Abs(got-truth) > 0.05*truth {
				t.Errorf("%s credits node 2's burner %.1fm, its cgroup used %.1fm: want within 5%%", what, got, truth)
			}
		}
	}

	// The shipped recording rules see the burner on node 2 only.
	burner := promSeries(ctx, t, srv, `namespace_pod:tare_cpu_cores:rate1m{namespace="default",pod="burner"}`)
	if len(burner) != 1 || burner[0]["node"] != "tare-node-2" {
		t.Errorf("namespace_pod:tare_cpu_cores:rate1m of the burner: %v, want one series, on tare-node-2", burner)
	}
}

// reportPrometheus runs tare report --prometheus for one node over span ending at end.
func reportPrometheus(ctx context.Context, t *testing.T, url, node string, span time.Duration, end time.Time) promread.Report {
	t.Helper()
	out, errOut, err := run(ctx, "report", "--prometheus", url, "--node", node, "--window", span.String(),
		"--end", end.UTC().Format(time.RFC3339Nano), "-o", "json")
	if err != nil {
		t.Fatalf("report --prometheus --node %s: %v\n%s", node, err, errOut)
	}
	var rep promread.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("report --prometheus -o json: %v\n%s", err, out)
	}
	return rep
}

// promSeries returns the label sets of an instant query's result, now.
func promSeries(ctx context.Context, t *testing.T, srv *promtest.Server, expr string) []map[string]string {
	t.Helper()
	raw, err := srv.Raw(ctx, expr, time.Now())
	if err != nil {
		t.Fatalf("query %s: %v", expr, err)
	}
	var resp struct {
		Status string `json:"status"`
		Data   struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(raw, &resp); err != nil || resp.Status != "success" {
		t.Fatalf("query %s: %v: %s", expr, err, raw)
	}
	out := make([]map[string]string, 0, len(resp.Data.Result))
	for _, r := range resp.Data.Result {
		out = append(out, r.Metric)
	}
	return out
}
