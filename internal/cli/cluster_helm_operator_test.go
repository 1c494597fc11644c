package cli

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os/exec"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/tare-dev/tare/internal/deploy"
	"github.com/tare-dev/tare/internal/lab"
	"github.com/tare-dev/tare/internal/promread/promtest"
)

// operatorPrometheus is the Prometheus object the operator turns the chart's PodMonitor and PrometheusRule
// into a configuration for. No replicas: the lab has no registry to pull Prometheus's image from; the
// configuration the operator generates runs in tare's upstream Prometheus outside the cluster instead.
const operatorPrometheus = `apiVersion: monitoring.coreos.com/v1
kind: Prometheus
metadata: {name: tare, namespace: %s}
spec:
  replicas: 0
  version: %s
  serviceAccountName: prometheus
  scrapeInterval: 5s
  evaluationInterval: 5s
  podMonitorSelector: {}
  podMonitorNamespaceSelector: {}
  ruleSelector: {}
  ruleNamespaceSelector: {}
`

// checkOperatorScrape runs the Prometheus Operator, built from its module, against the lab: it reads the
// chart's PodMonitor and PrometheusRule and writes a Prometheus configuration (with the scrape token
// inlined) and rule files, which tare's upstream Prometheus then runs with the lab's kubeconfig for
// discovery. tare's series must arrive from every agent, labelled with their node and pod, tare_node_cpus
// must be each node's CPUs as its kubelet counts them, and every node's recording rules must evaluate.
func checkOperatorScrape(ctx context.Context, t *testing.T, operator, prometheus, kc, ns string, nodes []corev1.Node, agents map[string]*corev1.Pod) {
	t.Helper()
	cs := clientsetOf(t, kc)
	stop := startOperator(t, operator, kc, ns)
	defer stop()
	kubectlIn(t, kc, fmt.Sprintf(operatorPrometheus, ns, lab.PrometheusVersion), "apply", "-f", "-")
	defer kubectl(t, kc, "delete", "prometheus", "tare", "--namespace", ns, "--wait=true")

	config, rules := operatorConfig(ctx, t, cs, ns)
	files := map[string][]byte{}
	var ruleFiles []string
	for name, content := range rules {
		files[name] = []byte(content)
		ruleFiles = append(ruleFiles, name)
	}
	sort.Strings(ruleFiles)
	adapted := adaptOperatorConfig(t, config, kc, ruleFiles)
	srv := promtest.StartBinary(t, prometheus, adapted, files)

	job := deploy.Name // the PodMonitor's jobLabel: the agents' app.kubernetes.io/name
	recorded := "node:tare_busy_cores:rate1m"
	deadline := time.Now().Add(90 * time.Second)
	for {
		up, err1 := srv.Count(ctx, `up{job="`+job+`"} == 1`, time.Now())
		rec, err2 := srv.Count(ctx, recorded, time.Now())
		if up == len(nodes) && rec == len(nodes) {
			t.Logf("the operator's configuration: %d agents up, %s for %d nodes", up, recorded, rec)
			break
		}
		if time.Now().After(deadline) {
			targets, err := srv.TargetHealth(ctx)
			t.Fatalf("after 90 s: %d agents up (%v), %d series of %s (%v): want %d each\ntargets (%v):\n  %s\nconfiguration:\n%s",
				up, err1, rec, recorded, err2, len(nodes), err, strings.Join(targets, "\n  "), redactCredentials(adapted))
		}
		time.Sleep(2 * time.Second)
	}
	info := promSeries(ctx, t, srv, `tare_agent_info{job="`+job+`"}`)
	if len(info) != len(nodes) {
		t.Errorf("tare_agent_info: %d series %v, want one per node (%d)", len(info), info, len(nodes))
	}
	for _, l := range info {
		if a := agents[l["node"]]; a == nil || l["pod"] != a.Name || l["namespace"] != ns {
			t.Errorf("tare_agent_info %v: want the node, pod and namespace of one of the agents", l)
		}
	}
	for _, n := range nodes {
		cpus, err := srv.Value(ctx, `tare_node_cpus{job="`+job+`",node="`+n.Name+`"}`, time.Now())
		busy, err2 := srv.Value(ctx, recorded+`{node="`+n.Name+`"}`, time.Now())
		want := float64(n.Status.Capacity.Cpu().Value())
		t.Logf("node %s through the operator's configuration: tare_node_cpus %.0f (kubelet: %.0f), %s %.3f", n.Name, cpus, want, recorded, busy)
		if err != nil || cpus != want {
			t.Errorf("node %s: tare_node_cpus %v (%v), the kubelet counts %v", n.Name, cpus, err, want)
		}
		if err2 != nil || busy < 0 || busy > want*1.05 {
			t.Errorf("node %s: %s %v (%v): want from 0 to its %v CPUs", n.Name, recorded, busy, err2, want)
		}
	}
}

// startOperator starts the operator on the lab, watching ns, and returns what stops it.
func startOperator(t *testing.T, operator, kc, ns string) func() {
	t.Helper()
	var logs bytes.Buffer
	cmd := exec.Command(operator, "--web.listen-address=127.0.0.1:0", "--namespaces="+ns, "--log-level=warn")
	cmd.Env = append(cmd.Environ(), "KUBECONFIG="+kc)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the Prometheus Operator: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("the Prometheus Operator's log:\n%s", logs.String())
		}
	}
	t.Cleanup(stop)
	return stop
}

// operatorConfig waits for the configuration and rule files the operator writes for the Prometheus object:
// the Secret prometheus-tare (prometheus.yaml.gz) once it scrapes the chart's PodMonitor, and the ConfigMap
// prometheus-tare-rulefiles-0 once it holds the chart's PrometheusRule.
func operatorConfig(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns string) (config []byte, rules map[string]string) {
	t.Helper()
	var last string
	deadline := time.Now().Add(90 * time.Second)
	for {
		config, last = nil, "no Secret prometheus-tare"
		if s, err := cs.CoreV1().Secrets(ns).Get(ctx, "prometheus-tare", metav1.GetOptions{}); err == nil {
			config, err = gunzip(s.Data["prometheus.yaml.gz"])
			last = fmt.Sprintf("prometheus.yaml.gz: %v\n%s", err, redactCredentials(config))
		}
		cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "prometheus-tare-rulefiles-0", metav1.GetOptions{})
		if err == nil && len(cm.Data) > 0 && bytes.Contains(config, []byte("podMonitor/"+ns+"/"+deploy.Name)) {
			return config, cm.Data
		}
		if time.Now().After(deadline) {
			t.Fatalf("the operator wrote no configuration scraping the PodMonitor with the PrometheusRule's rules within 90 s (rule files: %v): %s", err, last)
		}
		time.Sleep(time.Second)
	}
}

func gunzip(b []byte) ([]byte, error) {
	r, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}

// adaptOperatorConfig makes the operator's configuration run outside the cluster: the variables the
// operator's config reloader expands in the pod (its shard, 0 of 1, and its pod's name), discovery through
// the lab's kubeconfig, and the rule files beside it.
func adaptOperatorConfig(t *testing.T, config []byte, kc string, ruleFiles []string) []byte {
	t.Helper()
	expanded := strings.NewReplacer("$(SHARD)", "0", "$(POD_NAME)", "prometheus-tare-0").Replace(string(config))
	var cfg map[string]any
	if err := yaml.Unmarshal([]byte(expanded), &cfg); err != nil {
		t.Fatalf("the operator's configuration: %v", err)
	}
	scrapes, _ := cfg["scrape_configs"].([]any)
	for _, sc := range scrapes {
		sds, _ := sc.(map[string]any)["kubernetes_sd_configs"].([]any)
		for _, sd := range sds {
			sd.(map[string]any)["kubeconfig_file"] = kc
		}
	}
	cfg["rule_files"] = ruleFiles
	out, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// redactCredentials hides the bearer tokens the operator inlines, for logs.
func redactCredentials(config []byte) string {
	lines := strings.Split(string(config), "\n")
	for i, l := range lines {
		if k, _, ok := strings.Cut(l, "credentials:"); ok {
			lines[i] = k + "credentials: <redacted>"
		}
	}
	return strings.Join(lines, "\n")
}
