package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/tare-dev/tare/internal/classify"
	"github.com/tare-dev/tare/internal/cluster"
	"github.com/tare-dev/tare/internal/deploy"
	"github.com/tare-dev/tare/internal/lab/images"
	"github.com/tare-dev/tare/internal/promread/promtest"
	"github.com/tare-dev/tare/internal/testload"
)

// plantedSecret is on the burner pod's command line: it must not leave the node.
const plantedSecret = "planted-s3cret-4417"

// TestAgentsOnThreeNodeLab deploys the agents on a real three-node lab as a user would (tare agent manifest
// | kubectl apply -f -, after a server-side dry run), waits for one Ready agent per node, starts a burner
// pod of 200 millicores pinned to tare-node-2, and checks against the burner's own cgroup that the cluster
// view (tare cluster measure) and node 2's /metrics credit it within 5%, on node 2 only: the other nodes,
// which share the machine's kernel and processes, show it among other nodes' pods. The planted secret
// appears nowhere. Before the agents are deployed, the cluster view says how to deploy them. Then a real
// Prometheus discovers and scrapes the agents (checkPrometheusOnLab). The lab is the package's shared
// three-node lab (sharedLab), after TestHelmChartOnThreeNodeLab.
func TestAgentsOnThreeNodeLab(t *testing.T) {
	checkLab(t)
	prometheus := promtest.Upstream(t, "prometheus") // built the first time: before the lab's deadline starts
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	_, kc := sharedLab(ctx, t, "--nodes", "3")
	if _, errOut, err := run(ctx, "cluster", "measure", "--kubeconfig", kc, "--duration", "5s"); err == nil ||
		!strings.Contains(errOut, "tare agent manifest | kubectl apply -f -") {
		t.Errorf("cluster measure without agents: %v, stderr %q: want an error saying how to deploy them", err, errOut)
	}
	manifest, errOut, err := run(ctx, "agent", "manifest")
	if err != nil {
		t.Fatalf("agent manifest: %v\n%s", err, errOut)
	}
	// A server-side dry run cannot create the namespace the other objects go into: create it first.
	namespace, _, _ := strings.Cut(manifest, "\n---\n")
	if !strings.Contains(namespace, "kind: Namespace\n") {
		t.Fatalf("the manifest does not start with its Namespace:\n%s", namespace)
	}
	kubectlIn(t, kc, namespace, "apply", "-f", "-")
	kubectlIn(t, kc, manifest, "apply", "--dry-run=server", "-f", "-")
	list, errOut, err := run(ctx, "agent", "manifest", "-o", "json")
	if err != nil {
		t.Fatalf("agent manifest -o json: %v\n%s", err, errOut)
	}
	kubectlIn(t, kc, list, "apply", "--dry-run=server", "-f", "-")
	kubectlIn(t, kc, manifest, "apply", "-f", "-")
	t.Cleanup(func() {
		kubectlIn(t, kc, manifest, "delete", "--wait", "--timeout=60s", "-f", "-")
	})

	cs := clientsetOf(t, kc)
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil || len(nodes.Items) != 3 {
		t.Fatalf("nodes: %v, %v", nodes, err)
	}
	checkAgentRBAC(ctx, t, cs)
	agents := map[string]*corev1.Pod{}
	for _, n := range nodes.Items {
		agents[n.Name] = waitAgentReady(ctx, t, cs, n.Name)
	}

	burner := startBurnerPod(ctx, t, cs, "tare-node-2", 200)
	burnerCgroup := podCgroup(t, string(burner.UID))
	usage := testload.CgroupUsage(t, burnerCgroup)
	trace := testload.TraceUsage(usage)
	time.Sleep(12 * time.Second) // the window below is all traced

	// The cluster view over 10 s.
	html := filepath.Join(t.TempDir(), "cluster.html")
	out, errOut, err := run(ctx, "cluster", "measure", "--kubeconfig", kc, "--duration", "10s", "-o", "json", "--html", html)
	trace.Stop()
	if err != nil {
		t.Fatalf("cluster measure: %v\n%s", err, errOut)
	}
	if strings.Contains(out, plantedSecret) || strings.Contains(errOut, plantedSecret) {
		t.Error("the planted secret is in the cluster view")
	}
	if b, err := os.ReadFile(html); err != nil || !bytes.Contains(b, []byte("tare-node-2")) || bytes.Contains(b, []byte(plantedSecret)) {
		t.Errorf("the HTML report: %v (%d bytes): want the nodes and no secret", err, len(b))
	}
	htmlCheck(t, html, "stack", "bars") // the cluster's chart and one per node, drawn by Chromium
	var v cluster.View
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("cluster measure -o json: %v\n%s", err, out)
	}
	if v.Totals.Nodes != 3 || v.Totals.Measured != 3 || len(v.SharedKernels) != 1 || !v.SharedKernels[0].SharedProcesses {
		t.Errorf("totals %+v, shared kernels %+v: want 3 nodes measured, sharing one kernel and PID namespace", v.Totals, v.SharedKernels)
	}
	const group = "pod default/burner"
	for _, n := range v.Nodes {
		if n.Status != cluster.StatusOK {
			t.Errorf("node %s: %s: %s", n.Name, n.Status, n.Reason)
			continue
		}
		// In its pod (BPF and PERFMON granted, the host's PID namespace) the agent loads the exec
		// tracepoints, on the extra nodes too, whose network namespace refuses the proc connector.
		for _, l := range n.Limitations {
			if strings.Contains(l, "exec tracepoints") || strings.Contains(l, "process starts") {
				t.Errorf("node %s's agent does not follow process starts: %s", n.Name, l)
			}
		}
		var got *float64
		for _, g := range n.Groups {
			if g.Name == group {
				got = &g.CPU.Mean
			}
		}
		want, traced := trace.Between(n.Start, n.Start.Add(time.Duration(n.Seconds*float64(time.Second))))
		switch {
		case !traced:
			t.Errorf("node %s's window %s + %.1f s is not all traced", n.Name, n.Start, n.Seconds)
		case n.Name == "tare-node-2" && got == nil:
			t.Errorf("node 2's groups have no %q: %v", group, n.Groups)
		case n.Name == "tare-node-2":
			t.Logf("node 2: burner %.1fm, its cgroup %.1fm over the same %.1f s", *got, want, n.Seconds)
			if math.Abs(*got-want) > 0.05*want {
				t.Errorf("node 2 credits the burner %.1fm, its cgroup used %.1fm: want within 5%%", *got, want)
			}
		case got != nil:
			t.Errorf("node %s shows the burner of node 2 (%.1fm)", n.Name, *got)
		case n.CPU[cluster.OtherNodes] < 0.95*want:
			t.Errorf("node %s's other nodes' pods %.1fm: want the burner's %.1fm in it", n.Name, n.CPU[cluster.OtherNodes], want)
		}
	}

	// Who may read the agents: callers from a pod, users of cluster measure, the admission of its pods.
	checkAgentAccess(ctx, t, cs, agents["tare-node-2"], burnerCgroup)
	checkClusterMeasureRBAC(ctx, t, cs, kc)
	checkPodSecurity(ctx, t, cs, "tare-node-2")
	// The API server's pod proxy forwards no credentials: the agent refuses it.
	if b, err := cs.CoreV1().Pods(deploy.DefaultNamespace).ProxyGet("https", agents["tare-node-2"].Name, strconv.Itoa(deploy.DefaultPort), "/metrics", nil).DoRaw(ctx); err == nil {
		t.Errorf("GET /metrics through the API server's pod proxy: served %d bytes, want refused", len(b))
	}

	// /metrics of every agent: the burner only on node 2's, within 5% of its cgroup between two scrapes.
	admin := agentHTTPClient(t, kc)
	// The agent's counters are those of its last sample, whose time it publishes: a busy machine samples
	// late (9 samples in 12 s seen), so the rate is over the time between the two scrapes' samples.
	scrape := func(node string) (burner, samples float64, at time.Time) {
		code, body := getFrom(ctx, t, admin, "https://"+net.JoinHostPort(agents[node].Status.PodIP, strconv.Itoa(deploy.DefaultPort))+"/metrics", "")
		if code != 200 {
			t.Fatalf("GET /metrics of %s as the lab's admin (a client certificate): %d %.300s", node, code, body)
		}
		b := []byte(body)
		if bytes.Contains(b, []byte(plantedSecret)) {
			t.Errorf("the planted secret is in %s's /metrics", node)
		}
		parser := expfmt.NewTextParser(model.UTF8Validation)
		families, err := parser.TextToMetricFamilies(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("parsing %s's /metrics: %v", node, err)
		}
		burner = -1
		for _, m := range families["tare_group_cpu_seconds_total"].GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["pod"] == "burner" && labels["group_kind"] == classify.KindPod {
				burner = m.GetCounter().GetValue()
			}
		}
		if f := families["tare_samples_total"]; f != nil && len(f.GetMetric()) == 1 {
			samples = f.GetMetric()[0].GetCounter().GetValue()
		}
		if f := families["tare_last_sample_timestamp_seconds"]; f != nil && len(f.GetMetric()) == 1 {
			at = time.Unix(0, int64(f.GetMetric()[0].GetGauge().GetValue()*1e9))
		}
		return burner, samples, at
	}
	for _, n := range nodes.Items {
		if n.Name == "tare-node-2" {
			continue
		}
		if b, _, _ := scrape(n.Name); b >= 0 {
			t.Errorf("%s's /metrics has the burner of node 2", n.Name)
		}
	}
	trace = testload.TraceUsage(usage)
	time.Sleep(3 * time.Second) // the first scrape's sample is before it: the trace must cover it
	b0, s0, t0 := scrape("tare-node-2")
	time.Sleep(12 * time.Second)
	b1, s1, t1 := scrape("tare-node-2")
	trace.Stop()
	if b0 < 0 || b1 < 0 {
		t.Fatalf("node 2's /metrics has no counter for the burner pod")
	}
	if t0.IsZero() || !t1.After(t0) {
		t.Fatalf("node 2's /metrics has no tare_last_sample_timestamp_seconds, or it did not move: %v, %v", t0, t1)
	}
	want, traced := trace.Between(t0, t1)
	got := (b1 - b0) / t1.Sub(t0).Seconds() * 1000
	if !traced {
		t.Fatal("the scrapes are not traced")
	}
	t.Logf("node 2 /metrics: burner %.1fm over %.0f samples in %.2f s, its cgroup %.1fm", got, s1-s0, t1.Sub(t0).Seconds(), want)
	if math.Abs(got-want) > 0.05*want {
		t.Errorf("node 2's /metrics credits the burner %.1fm, its cgroup used %.1fm: want within 5%%", got, want)
	}

	checkPrometheusOnLab(ctx, t, prometheus, kc, agents, usage)
}

// startBurnerPod runs the lab's web image burning mc millicores on node, with the planted secret on its
// command line, and waits until it runs.
func startBurnerPod(ctx context.Context, t *testing.T, cs kubernetes.Interface, node string, mc int) *corev1.Pod {
	t.Helper()
	pods := cs.CoreV1().Pods(metav1.NamespaceDefault)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "burner"},
		Spec: corev1.PodSpec{NodeName: node, TerminationGracePeriodSeconds: new(int64), AutomountServiceAccountToken: new(bool),
			Containers: []corev1.Container{{Name: "burn", Image: images.Web.Name, ImagePullPolicy: corev1.PullNever,
				Args: []string{"--password=" + plantedSecret},
				Env:  []corev1.EnvVar{{Name: "BURN_MILLICORES", Value: strconv.Itoa(mc)}}}}},
	}
	if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pods.Delete(context.Background(), "burner", metav1.DeleteOptions{}) })
	for {
		p, err := pods.Get(ctx, "burner", metav1.GetOptions{})
		if err == nil && p.Status.Phase == corev1.PodRunning {
			return p
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the burner pod is not Running: %v %+v", err, p.Status)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
