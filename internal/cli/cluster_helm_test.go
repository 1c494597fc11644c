package cli

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/tare-dev/tare/internal/cluster"
	"github.com/tare-dev/tare/internal/deploy"
	"github.com/tare-dev/tare/internal/lab"
	"github.com/tare-dev/tare/internal/lab/labtest"
	"github.com/tare-dev/tare/internal/promread/promtest"
)

// chartDir is the agent's Helm chart, from this package's directory.
var chartDir = filepath.Join("..", "..", "deploy", "helm", "tare-agent")

// TestHelmChartOnThreeNodeLab installs the agent's chart with the real helm on a three-node lab, as the
// guide says (docs/guides/deploy-the-agent.md: a namespace of Pod Security level privileged, then helm install), with the Prometheus
// Operator's PodMonitor and PrometheusRule, whose CRDs come from the operator's module: the API server
// accepts both under strict field validation against those CRDs, and the operator, built from its module,
// turns them into a configuration under which tare's Prometheus scrapes every agent and evaluates the rules. An agent runs on every node and tare
// cluster measure reads them all, their node's CPUs and boot ID as the kubelet and the kernel tell them;
// helm upgrade rolls a new setting onto every node; helm uninstall leaves nothing of tare's. It runs on
// the package's shared three-node lab, before TestAgentsOnThreeNodeLab (this file's name sorts first), and
// leaves it as it found it but for the operator's CRDs.
func TestHelmChartOnThreeNodeLab(t *testing.T) {
	checkLab(t)
	// Built the first time, before the lab's deadline starts.
	helm := labtest.Helm(t)
	operator := labtest.PrometheusOperator(t)
	prometheus := promtest.Upstream(t, "prometheus")
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	crds, err := lab.PrometheusOperatorCRDs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, kc := sharedLab(ctx, t, "--nodes", "3")
	cs := clientsetOf(t, kc)

	// The operator's CRDs (server-side: they are too large for kubectl's last-applied annotation).
	for _, p := range crds {
		kubectl(t, kc, "apply", "--server-side", "-f", p)
	}
	kubectl(t, kc, "wait", "--for=condition=Established", "--timeout=60s", "crd", "--all")

	ns := deploy.DefaultNamespace
	kubectl(t, kc, "create", "namespace", ns)
	t.Cleanup(func() {
		// Gone before the next test on the shared lab deploys into the same namespace.
		_ = exec.Command("kubectl", "--kubeconfig", kc, "delete", "namespace", ns, "--wait", "--timeout=2m").Run()
	})
	kubectl(t, kc, "label", "namespace", ns, "pod-security.kubernetes.io/enforce=privileged")
	// The ServiceAccount of the operator's Prometheus, whose token the PodMonitor scrapes with.
	kubectl(t, kc, "create", "serviceaccount", "prometheus", "--namespace", ns)

	monitors := []string{"--set", "podMonitor.enabled=true", "--set", "prometheusRule.enabled=true",
		"--set", "podMonitor.prometheusServiceAccount=prometheus", "--set", "podMonitor.interval=5s"}
	checkOperatorObjects(t, helm, kc, ns, monitors)

	helmRun := func(args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, helm, append([]string{"--kubeconfig", kc, "--namespace", ns}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	helmRun(append([]string{"install", "tare-agent", chartDir, "--wait", "--timeout", "3m"}, monitors...)...)
	uninstalled := false
	t.Cleanup(func() {
		if !uninstalled {
			_ = exec.Command(helm, "--kubeconfig", kc, "--namespace", ns, "uninstall", "tare-agent", "--wait").Run()
		}
	})

	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil || len(nodes.Items) != 3 {
		t.Fatalf("nodes: %v, %v", nodes, err)
	}
	agents := map[string]*corev1.Pod{}
	for _, n := range nodes.Items {
		agents[n.Name] = waitAgentReady(ctx, t, cs, n.Name)
	}
	checkClusterMeasure(ctx, t, kc, nodes.Items, agents)
	checkScrapeToken(ctx, t, cs, ns, agents)
	checkOperatorScrape(ctx, t, operator, prometheus, kc, ns, nodes.Items, agents)

	// An upgrade with another interval replaces the agent on every node.
	helmRun(append([]string{"upgrade", "tare-agent", chartDir, "--wait", "--timeout", "3m", "--set", "interval=2s"}, monitors...)...)
	if h := helmRun("history", "tare-agent", "-o", "json"); !strings.Contains(h, `"revision":2`) {
		t.Errorf("helm history after the upgrade: %s: want revision 2", h)
	}
	for _, n := range nodes.Items {
		p := waitAgentArgs(ctx, t, cs, n.Name, "--interval=2s")
		if p.UID == agents[n.Name].UID {
			t.Errorf("node %s still runs the agent of the first release", n.Name)
		}
		agents[n.Name] = waitAgentReady(ctx, t, cs, n.Name)
	}
	checkClusterMeasure(ctx, t, kc, nodes.Items, agents)

	// What uninstall must remove, seen by the query that then must find nothing.
	before := leftovers(ctx, t, cs, kc, ns)
	for _, want := range []string{"daemonset.apps/tare-agent", "podmonitor.monitoring.coreos.com/tare-agent",
		"prometheusrule.monitoring.coreos.com/tare-agent", "clusterrole.rbac.authorization.k8s.io/" + deploy.MetricsReaderRole,
		"rolebinding.rbac.authorization.k8s.io/tare-agent-client-ca", "secret/sh.helm.release.v1.tare-agent.v2"} {
		if !strings.Contains(before, want+"\n") {
			t.Errorf("before uninstall, the query for tare's objects does not find %s:\n%s", want, before)
		}
	}
	helmRun("uninstall", "tare-agent", "--wait", "--timeout", "2m")
	uninstalled = true
	for left := before; left != ""; left = leftovers(ctx, t, cs, kc, ns) {
		select {
		case <-ctx.Done():
			t.Fatalf("after helm uninstall, still there:\n%s", left)
		case <-time.After(time.Second):
		}
	}
	t.Logf("helm uninstall removed %d objects; none of tare's left", strings.Count(before, "\n"))
}

// checkOperatorObjects checks the chart's PodMonitor and PrometheusRule (and the Secret and binding for
// Prometheus's token) against the API server, under strict field validation: a field the operator's CRDs
// do not define is refused, not silently dropped. A PodMonitor with an unknown field must be refused, or
// the check proves nothing.
func checkOperatorObjects(t *testing.T, helm, kc, ns string, set []string) {
	t.Helper()
	args := append([]string{"template", "tare-agent", chartDir, "--namespace", ns,
		"--show-only", "templates/podmonitor.yaml", "--show-only", "templates/prometheusrule.yaml"}, set...)
	out, err := exec.Command(helm, args...).Output()
	if err != nil {
		t.Fatalf("helm %s: %v", strings.Join(args, " "), err)
	}
	for _, kind := range []string{"kind: PodMonitor", "kind: PrometheusRule", "kind: Secret"} {
		if !strings.Contains(string(out), kind) {
			t.Fatalf("helm template renders no %s:\n%s", kind, out)
		}
	}
	kubectlIn(t, kc, string(out), "apply", "--dry-run=server", "--validate=strict", "-f", "-")
	bogus := strings.Replace(string(out), "  podMetricsEndpoints:\n", "  podMetricsEndpointz: []\n  podMetricsEndpoints:\n", 1)
	cmd := exec.Command("kubectl", "--kubeconfig", kc, "apply", "--dry-run=server", "--validate=strict", "-f", "-")
	cmd.Stdin = strings.NewReader(bogus)
	if b, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(b), "podMetricsEndpointz") {
		t.Errorf("a PodMonitor with an unknown field: %v\n%s\nwant it refused by the CRD's schema", err, b)
	}
}

// checkClusterMeasure runs tare cluster measure and checks that it reads every node's agent, each node's
// CPUs as its kubelet reports them and the boot ID as this machine's kernel reports it (the lab's nodes
// share it).
func checkClusterMeasure(ctx context.Context, t *testing.T, kc string, nodes []corev1.Node, agents map[string]*corev1.Pod) {
	t.Helper()
	out, errOut, err := run(ctx, "cluster", "measure", "--kubeconfig", kc, "--duration", "5s", "-o", "json")
	if err != nil {
		t.Fatalf("cluster measure: %v\n%s", err, errOut)
	}
	var v cluster.View
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("cluster measure -o json: %v\n%s", err, out)
	}
	bootID, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		t.Fatal(err)
	}
	if v.Totals.Nodes != len(nodes) || v.Totals.Measured != len(nodes) {
		t.Errorf("totals %+v: want %d nodes, all measured", v.Totals, len(nodes))
	}
	for _, n := range nodes {
		i := slices.IndexFunc(v.Nodes, func(r cluster.Node) bool { return r.Name == n.Name })
		if i < 0 {
			t.Errorf("node %s is not in the cluster view", n.Name)
			continue
		}
		r := v.Nodes[i]
		switch {
		case r.Status != cluster.StatusOK:
			t.Errorf("node %s: %s: %s", n.Name, r.Status, r.Reason)
		case r.Agent != agents[n.Name].Name:
			t.Errorf("node %s read from agent %q, the API server's agent pod there is %s", n.Name, r.Agent, agents[n.Name].Name)
		case int64(r.CPUs) != n.Status.Capacity.Cpu().Value():
			t.Errorf("node %s: the agent counts %d CPUs, the kubelet %d", n.Name, r.CPUs, n.Status.Capacity.Cpu().Value())
		case r.BootID != strings.TrimSpace(string(bootID)):
			t.Errorf("node %s: boot ID %q, the kernel's %q", n.Name, r.BootID, strings.TrimSpace(string(bootID)))
		default:
			t.Logf("node %s: agent %s, %d CPUs (kubelet: %d), busy %.1fm over %.1f s", n.Name, r.Agent, r.CPUs,
				n.Status.Capacity.Cpu().Value(), r.Busy.Mean, r.Seconds)
		}
	}
}

// checkScrapeToken checks the credentials the chart gives the PodMonitor: the token Secret of Prometheus's
// ServiceAccount gets /metrics from every agent, as the operator's Prometheus would present it (TLS
// unverified, as its tlsConfig says), and no token gets nothing.
func checkScrapeToken(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns string, agents map[string]*corev1.Pod) {
	t.Helper()
	const secret = "tare-agent-scrape-prometheus"
	var token string
	for token == "" {
		s, err := cs.CoreV1().Secrets(ns).Get(ctx, secret, metav1.GetOptions{})
		if err == nil {
			token = string(s.Data["token"])
		}
		if token != "" {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the Secret %s/%s has no token: %v", ns, secret, err)
		case <-time.After(500 * time.Millisecond):
		}
	}
	client := &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	for node, p := range agents {
		url := "https://" + net.JoinHostPort(p.Status.PodIP, strconv.Itoa(deploy.DefaultPort)) + "/metrics"
		if code, body := getFrom(ctx, t, client, url, token); code != http.StatusOK || !strings.Contains(body, "tare_agent_info") {
			t.Errorf("node %s: GET /metrics with Prometheus's token: %d, %.200s: want 200 and tare's metrics", node, code, body)
		}
		if code, _ := getFrom(ctx, t, client, url, ""); code != http.StatusUnauthorized {
			t.Errorf("node %s: GET /metrics without a token: %d, want 401", node, code)
		}
	}
}

// waitAgentArgs waits for the agent's pod on node to run with the argument arg.
func waitAgentArgs(ctx context.Context, t *testing.T, cs kubernetes.Interface, node, arg string) *corev1.Pod {
	t.Helper()
	sel := metav1.ListOptions{LabelSelector: deploy.NameLabel + "=" + deploy.Name, FieldSelector: "spec.nodeName=" + node}
	for {
		pods, err := cs.CoreV1().Pods(deploy.DefaultNamespace).List(ctx, sel)
		if err == nil && len(pods.Items) == 1 && pods.Items[0].DeletionTimestamp == nil &&
			slices.Contains(pods.Items[0].Spec.Containers[0].Args, arg) {
			return &pods.Items[0]
		}
		select {
		case <-ctx.Done():
			t.Fatalf("node %s runs no agent with %s: %v", node, arg, err)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// leftovers lists, one a line, the objects labelled as tare's in any namespace and Helm's records of the
// release.
func leftovers(ctx context.Context, t *testing.T, cs kubernetes.Interface, kc, ns string) string {
	t.Helper()
	kinds := "daemonsets,pods,serviceaccounts,secrets,rolebindings,clusterroles,clusterrolebindings,podmonitors,prometheusrules"
	var left strings.Builder
	for _, l := range strings.Split(kubectl(t, kc, "get", kinds, "--all-namespaces", "-l", "app.kubernetes.io/part-of=tare", "-o", "name"), "\n") {
		if strings.Contains(l, "/") { // not kubectl's "No resources found"
			left.WriteString(l + "\n")
		}
	}
	releases, err := cs.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{LabelSelector: "owner=helm"})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range releases.Items {
		left.WriteString("secret/" + s.Name + "\n")
	}
	return left.String()
}
