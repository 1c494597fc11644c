package deploy_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/yaml"

	"github.com/tare-dev/tare/internal/deploy"
	"github.com/tare-dev/tare/internal/lab/labtest"
	"github.com/tare-dev/tare/internal/promconf"
)

// chartDir is the agent's Helm chart, from this package's directory.
var chartDir = filepath.Join("..", "..", "deploy", "helm", "tare-agent")

// helmOnly are the labels the chart adds to every object's metadata and tare agent manifest does not: Helm's
// own bookkeeping, not the agent's.
var helmOnly = []string{"app.kubernetes.io/managed-by", "helm.sh/chart"}

// helmTemplate renders the chart as release tare-agent in namespace with the real helm and returns its
// objects by "Kind namespace/name".
func helmTemplate(t *testing.T, helm, namespace string, set ...string) map[string]map[string]any {
	t.Helper()
	args := []string{"template", "tare-agent", chartDir, "--namespace", namespace}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	out, err := exec.Command(helm, args...).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, ee.Stderr)
		}
		t.Fatalf("helm %s: %v", strings.Join(args, " "), err)
	}
	objs := map[string]map[string]any{}
	dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(out), 4096)
	for {
		var m map[string]any
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("helm template's output: %v\n%s", err, out)
		}
		if m == nil { // a document of comments only
			continue
		}
		k := key(m)
		if _, dup := objs[k]; dup {
			t.Fatalf("helm template renders %s twice", k)
		}
		objs[k] = m
	}
	return objs
}

// manifest returns the objects tare agent manifest prints for o (its -o json List), by "Kind namespace/name".
func manifest(t *testing.T, o deploy.Options) map[string]map[string]any {
	t.Helper()
	objs, err := deploy.Objects(o)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := deploy.WriteJSON(&b, objs); err != nil {
		t.Fatal(err)
	}
	var list struct{ Items []map[string]any }
	if err := json.Unmarshal(b.Bytes(), &list); err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]any{}
	for _, m := range list.Items {
		out[key(m)] = m
	}
	return out
}

func key(m map[string]any) string {
	meta, _ := m["metadata"].(map[string]any)
	return fmt.Sprintf("%v %v/%v", m["kind"], meta["namespace"], meta["name"])
}

// TestChartMatchesManifest: helm template of the chart renders, field by field, the objects tare agent
// manifest prints with the same settings, less the Namespace (Helm installs into one that exists) and
// Helm's own labels: one can be used for the other.
func TestChartMatchesManifest(t *testing.T) {
	helm := labtest.Helm(t)
	for _, tc := range []struct {
		name string
		opts deploy.Options
		set  []string
	}{
		{name: "defaults", opts: deploy.Options{Namespace: deploy.DefaultNamespace}},
		{
			name: "settings",
			opts: deploy.Options{Namespace: "monitoring", Image: "registry.example.com/tare:v1", Interval: 2 * time.Second, Port: 9900, HealthPort: 9950},
			set:  []string{"image.repository=registry.example.com/tare", "image.tag=v1", "interval=2s", "port=9900", "healthPort=9950"},
		},
		{
			name: "health port follows the port",
			opts: deploy.Options{Namespace: deploy.DefaultNamespace, Port: 11250},
			set:  []string{"port=11250"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := helmTemplate(t, helm, tc.opts.Namespace, tc.set...)
			want := manifest(t, tc.opts)
			ns := fmt.Sprintf("Namespace <nil>/%s", tc.opts.Namespace)
			if _, ok := want[ns]; !ok {
				t.Fatalf("the manifest has no %s: %v", ns, slices.Sorted(maps.Keys(want)))
			}
			delete(want, ns)
			for k, m := range got {
				meta := m["metadata"].(map[string]any)
				labels, _ := meta["labels"].(map[string]any)
				for _, l := range helmOnly {
					if _, ok := labels[l]; !ok {
						t.Errorf("%s lacks the label %s", k, l)
					}
					delete(labels, l)
				}
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("helm template (+) differs from tare agent manifest (-):\n%s", d)
			}
		})
	}
}

// TestChartLint: helm lint --strict passes with the defaults and with every option on.
func TestChartLint(t *testing.T) {
	helm := labtest.Helm(t)
	for _, set := range [][]string{nil, allOn} {
		args := []string{"lint", "--strict", chartDir}
		for _, s := range set {
			args = append(args, "--set", s)
		}
		if out, err := exec.Command(helm, args...).CombinedOutput(); err != nil {
			t.Errorf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// allOn sets every option of the chart that adds objects or fields.
var allOn = []string{
	"podMonitor.enabled=true", "podMonitor.namespace=monitoring", "podMonitor.prometheusServiceAccount=prometheus",
	"podMonitor.labels.release=kube-prometheus", "prometheusRule.enabled=true", "prometheusRule.labels.release=kube-prometheus",
	"tls.secretName=tare-tls", "clientCA.configMapName=tare-client-ca", "extraArgs={--serve-cmdlines,--top-processes=50}",
	"clusterReaders[0].kind=User", "clusterReaders[0].name=jane", "clusterReaders[0].apiGroup=rbac.authorization.k8s.io",
	"resources.limits.memory=1Gi", "podLabels.team=sre",
}

// TestChartOptions: what each option adds to the rendered objects.
func TestChartOptions(t *testing.T) {
	helm := labtest.Helm(t)
	objs := helmTemplate(t, helm, "tare", allOn...)
	ds := objs["DaemonSet tare/tare-agent"]
	if ds == nil {
		t.Fatalf("no DaemonSet: %v", slices.Sorted(maps.Keys(objs)))
	}
	pod := dig(t, ds, "spec", "template", "spec").(map[string]any)
	c := pod["containers"].([]any)[0].(map[string]any)
	args := fmt.Sprint(c["args"])
	for _, want := range []string{"--tls-cert-file=/etc/tare/tls/tls.crt", "--tls-private-key-file=/etc/tare/tls/tls.key",
		"--client-ca-file=/etc/tare/client-ca/ca.crt", "--serve-cmdlines", "--top-processes=50"} {
		if !strings.Contains(args, want) {
			t.Errorf("args %s: want %s", args, want)
		}
	}
	if env := fmt.Sprint(c["env"]); !strings.Contains(env, "value:768MiB") {
		t.Errorf("env %s: want GOMEMLIMIT 768MiB, three quarters of the 1Gi limit", env)
	}
	if vols := fmt.Sprint(pod["volumes"]); !strings.Contains(vols, "secretName:tare-tls") || !strings.Contains(vols, "name:tare-client-ca") {
		t.Errorf("volumes %s: want the TLS Secret and the client CA ConfigMap", vols)
	}
	if l := fmt.Sprint(dig(t, ds, "spec", "template", "metadata", "labels")); !strings.Contains(l, "team:sre") {
		t.Errorf("pod labels %s: want team=sre", l)
	}

	pm := objs["PodMonitor monitoring/tare-agent"]
	if pm == nil {
		t.Fatalf("no PodMonitor in monitoring: %v", slices.Sorted(maps.Keys(objs)))
	}
	ep := dig(t, pm, "spec", "podMetricsEndpoints").([]any)[0].(map[string]any)
	if ep["port"] != deploy.PortName || ep["scheme"] != "https" || ep["honorLabels"] != true ||
		fmt.Sprint(dig(t, ep, "authorization", "credentials", "name")) != "tare-agent-scrape-prometheus" {
		t.Errorf("PodMonitor endpoint %v: want port %s over https, honouring labels, with Prometheus's token", ep, deploy.PortName)
	}
	if sel := fmt.Sprint(dig(t, pm, "spec", "selector", "matchLabels")); sel != fmt.Sprintf("map[%s:%s]", deploy.NameLabel, deploy.Name) {
		t.Errorf("PodMonitor selector %s: want the agent's pods", sel)
	}
	if sa := fmt.Sprint(dig(t, objs["Secret monitoring/tare-agent-scrape-prometheus"], "metadata", "annotations")); !strings.Contains(sa, "kubernetes.io/service-account.name:prometheus") {
		t.Errorf("Prometheus's token Secret: annotations %s", sa)
	}
	if subj := fmt.Sprint(dig(t, objs["ClusterRoleBinding <nil>/"+deploy.MetricsReaderRole], "subjects")); !strings.Contains(subj, "name:prometheus namespace:monitoring") {
		t.Errorf("the metrics readers' binding: subjects %s: want Prometheus's ServiceAccount", subj)
	}
	if subj := fmt.Sprint(dig(t, objs["ClusterRoleBinding <nil>/"+deploy.ClusterReaderRole], "subjects")); !strings.Contains(subj, "name:jane") {
		t.Errorf("the cluster readers' binding: subjects %s: want jane", subj)
	}

	// The PrometheusRule holds the shipped rules as they are.
	pr := objs["PrometheusRule tare/tare-agent"]
	if pr == nil {
		t.Fatalf("no PrometheusRule: %v", slices.Sorted(maps.Keys(objs)))
	}
	b, err := promconf.Read(promconf.RulesFile)
	if err != nil {
		t.Fatal(err)
	}
	var rules map[string]any
	if err := yaml.Unmarshal(b, &rules); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(rules, pr["spec"]); d != "" {
		t.Errorf("the PrometheusRule's spec (+) differs from the shipped rules (-):\n%s", d)
	}
	if l := fmt.Sprint(dig(t, pr, "metadata", "labels")); !strings.Contains(l, "release:kube-prometheus") {
		t.Errorf("PrometheusRule labels %s: want release=kube-prometheus", l)
	}
}

func dig(t *testing.T, m map[string]any, path ...string) any {
	t.Helper()
	var v any = m
	for _, p := range path {
		mm, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("%v: no %s", path, p)
		}
		v = mm[p]
	}
	return v
}

// TestChartRulesAreShipped: the chart's copy of the recording rules is deploy/prometheus/rules.yml (Helm
// reads files only inside the chart).
func TestChartRulesAreShipped(t *testing.T) {
	t.Parallel()
	want, err := promconf.Read(promconf.RulesFile)
	if err != nil {
		t.Fatal(err)
	}
	copyPath := filepath.Join(chartDir, "files", "rules.yml")
	got, err := os.ReadFile(copyPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from deploy/prometheus/rules.yml: cp deploy/prometheus/rules.yml %s", copyPath, filepath.Join("deploy", "helm", "tare-agent", "files", "rules.yml"))
	}
}
