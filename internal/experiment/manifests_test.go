package experiment

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/tare-dev/tare/internal/lab"
)

func TestParseManifestsErrors(t *testing.T) {
	t.Parallel()
	base := "name: x\ntrials: 4\nwindow: 10s\n"
	for _, tc := range []struct{ name, yaml, want string }{
		{"commands target", base + "target: {commands: {apply: 'true'}}\nvariants: [{name: a}, {name: b, manifests: [ds.yaml]}]\n", "need the lab target"},
		{"no node", base + "target: {lab: {control_plane_only: true}}\nguard: {deployment: false}\nvariants: [{name: a}, {name: b, manifests: [ds.yaml]}]\n", "need a node"},
		{"pause", base + "variants: [{name: a}, {name: b, pause: true, manifests: [ds.yaml]}]\n", "manifests or helm, and pause"},
		{"empty path", base + "variants: [{name: a}, {name: b, manifests: ['']}]\n", "an empty path"},
		{"twice", base + "variants: [{name: a}, {name: b, manifests: [ds.yaml, ds.yaml]}]\n", "listed twice"},
		{"not a list", base + "variants: [{name: a}, {name: b, manifests: ds.yaml}]\n", "manifests"},
		{"unknown field", base + "variants: [{name: a}, {name: b, manifest: [ds.yaml]}]\n", `unknown field "manifest"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse([]byte(tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Parse: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestLoadExampleDaemonSets: the ready-made DaemonSet specs load, their manifests resolved next to the spec
// and read, each with one DaemonSet whose images the lab provides.
func TestLoadExampleDaemonSets(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"node-exporter", "process-exporter", "tare-agent"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s, err := Load(filepath.Join("../../examples/experiments", name+".yaml"))
			if err != nil {
				t.Fatal(err)
			}
			v := s.variant(name)
			want, _ := filepath.Abs(filepath.Join("../../examples/experiments/daemonsets", name+".yaml"))
			if diff := cmp.Diff([]string{want}, v.Manifests); diff != "" {
				t.Fatalf("manifests (-want +got):\n%s", diff)
			}
			if !s.hasManifests() || !s.SharedLab() {
				t.Errorf("hasManifests %v, SharedLab %v: want both (the variants differ only in what they install)", s.hasManifests(), s.SharedLab())
			}
			objs, err := readManifests(v.Manifests)
			if err != nil {
				t.Fatal(err)
			}
			if n := len(slices.DeleteFunc(slices.Clone(objs), func(o *unstructured.Unstructured) bool { return !isDaemonSet(o) })); n != 1 {
				t.Errorf("%d DaemonSets, want 1", n)
			}
			if imgs := imagesOf(objs); len(imgs) != 1 || !strings.HasPrefix(imgs[0], "tare.") {
				t.Errorf("images %v: want one of the lab's own", imgs)
			}
		})
	}
}

func TestLoadManifestMissing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	spec := filepath.Join(dir, "spec.yaml")
	if err := os.WriteFile(spec, []byte("name: x\ntrials: 4\nwindow: 10s\nvariants: [{name: a}, {name: b, manifests: [gone.yaml]}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(spec)
	if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "gone.yaml")) {
		t.Fatalf("Load: %v, want an error naming %s", err, filepath.Join(dir, "gone.yaml"))
	}
}

const testDaemonSet = `apiVersion: apps/v1
kind: DaemonSet
metadata: {name: ds, namespace: ns}
spec:
  selector: {matchLabels: {app: ds}}
  template:
    metadata: {labels: {app: ds}}
    spec:
      initContainers: [{name: init, image: busybox}]
      containers: [{name: c, image: tare.lab/exporters:v1}, {name: d, image: busybox}]
`

func TestReadManifestsErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, yaml, want string }{
		{"no daemonset", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n", "no DaemonSet"},
		{"empty", "# nothing\n", "no DaemonSet"},
		{"no name", "apiVersion: v1\nkind: ConfigMap\nmetadata: {generateName: c-}\n", "no metadata.name"},
		{"no kind", "apiVersion: v1\nmetadata: {name: c}\n", "no kind"},
		{"no apiVersion", "kind: ConfigMap\nmetadata: {name: c}\n", "apiVersion"},
		{"bad apiVersion", "apiVersion: a/b/c\nkind: ConfigMap\nmetadata: {name: c}\n", "apiVersion"},
		{"old daemonset", "apiVersion: apps/v1beta2\nkind: DaemonSet\nmetadata: {name: d}\n", "apps/v1"},
		{"twice", testDaemonSet + "---\n" + testDaemonSet, "given twice"},
		{"not yaml", "{[", "document 1"},
		{"second document", testDaemonSet + "---\nkind: [\n", "document 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := filepath.Join(t.TempDir(), "m.yaml")
			if err := os.WriteFile(p, []byte(tc.yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := readManifests([]string{p})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("readManifests: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestParseManifestList: a v1 List (kubectl's and tare agent manifest's -o json) is its items.
func TestParseManifestList(t *testing.T) {
	t.Parallel()
	objs, err := parseManifest([]byte(`{"apiVersion":"v1","kind":"List","items":[
		{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"ns"}},
		{"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"name":"ds","namespace":"ns"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range objs {
		got = append(got, keyOf(o).String())
	}
	if diff := cmp.Diff([]string{"Namespace ns", "DaemonSet.apps ns/ds"}, got); diff != "" {
		t.Fatalf("objects (-want +got):\n%s", diff)
	}
}

func TestInstallPlan(t *testing.T) {
	t.Parallel()
	var objs []*unstructured.Unstructured
	for _, k := range [][2]string{{"apps/v1", "DaemonSet"}, {"v1", "Service"}, {"rbac.authorization.k8s.io/v1", "ClusterRoleBinding"},
		{"v1", "ServiceAccount"}, {"example.com/v1", "Widget"}, {"apiextensions.k8s.io/v1", "CustomResourceDefinition"},
		{"rbac.authorization.k8s.io/v1", "ClusterRole"}, {"v1", "Namespace"}, {"v1", "ConfigMap"}} {
		o := &unstructured.Unstructured{}
		o.SetAPIVersion(k[0])
		o.SetKind(k[1])
		o.SetName("x")
		objs = append(objs, o)
	}
	kinds := func(os []*unstructured.Unstructured) []string {
		var out []string
		for _, o := range os {
			out = append(out, o.GetKind())
		}
		return out
	}
	want := []string{"Namespace", "CustomResourceDefinition", "ServiceAccount", "ConfigMap", "ClusterRoleBinding", "ClusterRole", "Service", "Widget", "DaemonSet"}
	if diff := cmp.Diff(want, kinds(installPlan(objs))); diff != "" {
		t.Errorf("install order (-want +got):\n%s", diff)
	}
	slices.Reverse(want)
	if diff := cmp.Diff(want, kinds(removePlan(objs))); diff != "" {
		t.Errorf("removal order (-want +got):\n%s", diff)
	}
	if objs[0].GetKind() != "DaemonSet" {
		t.Error("installPlan reordered its input")
	}
}

func TestImagesOf(t *testing.T) {
	t.Parallel()
	objs, err := parseManifest([]byte(testDaemonSet + "---\napiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: pause}]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"busybox", "tare.lab/exporters:v1", "pause"}, imagesOf(objs)); diff != "" {
		t.Fatalf("images (-want +got):\n%s", diff)
	}
}

func TestParseHelmErrors(t *testing.T) {
	t.Parallel()
	base := "name: x\ntrials: 4\nwindow: 10s\n"
	for _, tc := range []struct{ name, yaml, want string }{
		{"no chart", base + "variants: [{name: a}, {name: b, helm: {values: {a: 1}}}]\n", "helm: no chart"},
		{"bad release", base + "variants: [{name: a}, {name: b, helm: {chart: c, release: Agent}}]\n", `helm.release "Agent"`},
		{"bad namespace", base + "variants: [{name: a}, {name: b, helm: {chart: c, namespace: a_b}}]\n", `helm.namespace "a_b"`},
		{"variant not a name", base + "variants: [{name: a}, {name: B.1, helm: {chart: c}}]\n", "give helm.release"},
		{"unknown field", base + "variants: [{name: a}, {name: b, helm: {chart: c, value: {}}}]\n", `unknown field "value"`},
		{"commands target", base + "target: {commands: {apply: 'true'}}\nvariants: [{name: a}, {name: b, helm: {chart: c}}]\n", "need the lab target"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse([]byte(tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Parse: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestLoadHelmChart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	spec := filepath.Join(dir, "spec.yaml")
	body := "name: x\ntrials: 4\nwindow: 10s\nvariants: [{name: a}, {name: agent, helm: {chart: %s, values: {port: 9999}}}]\n"
	if err := os.WriteFile(spec, []byte(strings.Replace(body, "%s", "missing-chart", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(spec); err == nil || !strings.Contains(err.Error(), "helm.chart") {
		t.Fatalf("Load with a missing chart: %v, want a helm.chart error", err)
	}
	chart, _ := filepath.Abs("../../deploy/helm/tare-agent")
	if err := os.WriteFile(spec, []byte(strings.Replace(body, "%s", chart, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Load(spec)
	if err != nil {
		t.Fatal(err)
	}
	if h := s.variant("agent").Helm; h.Chart != chart || h.Values["port"] != float64(9999) || !s.hasManifests() {
		t.Fatalf("helm %+v", h)
	}
}

// TestRenderHelm renders tare's own chart with the real helm (cached by tare lab install or the Helm
// tests; skipped without it): its objects, a DaemonSet among them, and the release's Namespace first.
func TestRenderHelm(t *testing.T) {
	t.Parallel()
	helm := lab.HelmBin()
	if helm == "" {
		t.Skip("helm is not in tare's cache (the Helm chart test builds it)")
	}
	chart, _ := filepath.Abs("../../deploy/helm/tare-agent")
	v := Variant{Name: "agent", Helm: &HelmRelease{Chart: chart, Namespace: "tare-test", Values: map[string]any{"image": map[string]any{"tag": "x"}}}}
	objs, ns, err := renderHelm(context.Background(), helm, t.TempDir(), v)
	if err != nil {
		t.Fatal(err)
	}
	if ns != "tare-test" || objs[0].GetKind() != "Namespace" || objs[0].GetName() != "tare-test" {
		t.Errorf("namespace %s, first object %s: want the release's Namespace first", ns, keyOf(objs[0]))
	}
	if err := checkObjects(objs); err != nil {
		t.Error(err)
	}
	if _, _, err := renderHelm(context.Background(), helm, t.TempDir(), Variant{Name: "agent", Helm: &HelmRelease{Chart: filepath.Join(t.TempDir(), "none")}}); err == nil || !strings.Contains(err.Error(), "helm template") {
		t.Errorf("a missing chart: %v, want helm template's error", err)
	}
}
