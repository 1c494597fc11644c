package density

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tare-dev/tare/internal/htmlreport"
)

// labRun is testdata/density-lab.json, a real run on the lab (tare density --pods 0,4,8,16 --trials 2
// --window 6s -o json), as tare reads it.
func labRun(t *testing.T) Output {
	t.Helper()
	var o Output
	if err := json.Unmarshal(readLab(t), &o); err != nil {
		t.Fatal(err)
	}
	return o
}

func readLab(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/density-lab.json")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// labJSON is the part of the run's JSON the tests check the view against, decoded as plain JSON
// (without Output's decoders).
type labJSON struct {
	Counts []int `json:"pod_counts"`
	Steps  []struct {
		Trial  int                           `json:"trial"`
		Pods   int                           `json:"pods"`
		Busy   float64                       `json:"node_busy_millicores"`
		Groups map[string]map[string]float64 `json:"groups"`
	} `json:"steps"`
	Model struct {
		Busy       map[string]float64 `json:"node_busy_millicores"`
		Components []struct {
			Name string             `json:"name"`
			CPU  map[string]float64 `json:"cpu_millicores"`
			RSS  map[string]float64 `json:"rss_bytes"`
			Priv map[string]float64 `json:"private_bytes"`
		} `json:"components"`
		OverheadCPU  map[string]float64 `json:"overhead_cpu_millicores"`
		OverheadPriv map[string]float64 `json:"overhead_private_bytes"`
		OverheadFrom []string           `json:"overhead_from"`
	} `json:"model"`
	KubeReserved struct {
		MaxPods int `json:"max_pods"`
	} `json:"kube_reserved"`
	RuntimeClass struct {
		Overhead struct {
			PodFixed map[string]string `json:"podFixed"`
		} `json:"overhead"`
	} `json:"runtime_class"`
}

func readLabJSON(t *testing.T) labJSON {
	t.Helper()
	var j labJSON
	if err := json.Unmarshal(readLab(t), &j); err != nil {
		t.Fatal(err)
	}
	return j
}

// fitOf is a fit of the JSON as the view holds it.
func fitOf(m map[string]float64) htmlreport.DensityFit {
	return htmlreport.DensityFit{Fixed: m["fixed"], Marginal: m["marginal"], Lo: m["marginal_lo"], Hi: m["marginal_hi"], R2: m["r2"], N: int(m["n"])}
}

// TestViewOfLabRun: the page's view of a real run holds every step's trial, pod count and node busy, and
// per component, in the JSON's order, each step's CPU and private memory exactly as the JSON has them
// (0 where the step did not see the component) with its fits; for the components outside the pod
// cgroups, each step's sum; the kube-reserved rows and the RuntimeClass's overhead.
func TestViewOfLabRun(t *testing.T) {
	t.Parallel()
	j := readLabJSON(t)
	v := labRun(t).View()
	if len(v.Steps) != len(j.Steps) || len(j.Steps) != 8 {
		t.Fatalf("%d steps in the view, %d in the JSON, want 8", len(v.Steps), len(j.Steps))
	}
	var busy []float64
	for i, s := range j.Steps {
		if v.Steps[i].Trial != s.Trial || v.Steps[i].Pods != s.Pods {
			t.Errorf("step %d: trial %d with %d pods, the JSON's trial %d with %d", i, v.Steps[i].Trial, v.Steps[i].Pods, s.Trial, s.Pods)
		}
		busy = append(busy, s.Busy)
	}
	if diff := cmp.Diff(htmlreport.DensitySeries{Values: busy, Fit: fitOf(j.Model.Busy)}, v.Busy); diff != "" {
		t.Errorf("node busy (-JSON +view):\n%s", diff)
	}
	var names []string
	for _, c := range v.Components {
		names = append(names, c.Name)
	}
	var want []string
	for _, c := range j.Model.Components {
		want = append(want, c.Name)
	}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Fatalf("components (-JSON +view):\n%s", diff)
	}
	for i, c := range j.Model.Components {
		var cpu, priv []float64
		for _, s := range j.Steps {
			cpu = append(cpu, s.Groups[c.Name]["cpu_millicores"])
			priv = append(priv, s.Groups[c.Name]["private_bytes"])
		}
		got := v.Components[i]
		if diff := cmp.Diff(htmlreport.DensitySeries{Values: cpu, Fit: fitOf(c.CPU)}, got.CPU); diff != "" {
			t.Errorf("%s CPU (-JSON +view):\n%s", c.Name, diff)
		}
		if diff := cmp.Diff(htmlreport.DensitySeries{Values: priv, Fit: fitOf(c.Priv)}, got.Private); diff != "" {
			t.Errorf("%s private memory (-JSON +view):\n%s", c.Name, diff)
		}
	}
	var cpu, priv []float64
	for _, s := range j.Steps {
		var c, p float64
		for _, name := range j.Model.OverheadFrom {
			c += s.Groups[name]["cpu_millicores"]
			p += s.Groups[name]["private_bytes"]
		}
		cpu, priv = append(cpu, c), append(priv, p)
	}
	o := v.Outside
	if diff := cmp.Diff(j.Model.OverheadFrom, o.From); diff != "" || len(o.From) == 0 {
		t.Errorf("outside the pod cgroups (-JSON +view):\n%s", diff)
	}
	if diff := cmp.Diff(htmlreport.DensitySeries{Values: cpu, Fit: fitOf(j.Model.OverheadCPU)}, o.CPU); diff != "" {
		t.Errorf("outside the pod cgroups, CPU (-JSON +view):\n%s", diff)
	}
	if diff := cmp.Diff(htmlreport.DensitySeries{Values: priv, Fit: fitOf(j.Model.OverheadPriv)}, o.Private); diff != "" {
		t.Errorf("outside the pod cgroups, private memory (-JSON +view):\n%s", diff)
	}
	if v.Reserved == nil || v.Reserved.MaxPods != j.KubeReserved.MaxPods || len(v.Reserved.Providers) != 3 {
		t.Errorf("kube-reserved %+v, want %d pods and three providers", v.Reserved, j.KubeReserved.MaxPods)
	}
	for name, q := range j.RuntimeClass.Overhead.PodFixed {
		if !strings.Contains(v.RuntimeClass, name+": "+q) {
			t.Errorf("the RuntimeClass's YAML lacks %s: %s:\n%s", name, q, v.RuntimeClass)
		}
	}
	if v.Node != "vm" || !slices.Equal(v.Counts, j.Counts) || v.Trials != 2 || v.Window != "6s" {
		t.Errorf("run %s %v %d %s", v.Node, v.Counts, v.Trials, v.Window)
	}
}

// TestViewSkipsWhatTheTableSkips: a component that used no CPU and held no memory is in neither the
// table nor the page; a run without steps gives the page's banner.
func TestViewSkipsWhatTheTableSkips(t *testing.T) {
	t.Parallel()
	ws := []Window{
		{Step: Step{Trial: 1, Pods: 0}, Busy: 10, Groups: map[string]Cost{"kubelet": {CPU: 5, RSS: 80 << 20, Private: 80 << 20}, "idle": {}}},
		{Step: Step{Trial: 1, Pods: 4}, Busy: 12, Groups: map[string]Cost{"kubelet": {CPU: 6, RSS: 81 << 20, Private: 81 << 20}, "idle": {}}},
	}
	o := Output{Report: Report{Node: "n", Counts: []int{0, 4}, Trials: 1, Steps: ws, Model: Fitted(ws, map[string]string{"kubelet": OutsidePodCgroup}, 1)}}
	if _, ok := o.Model.Component("idle"); !ok {
		t.Fatal("the model has no line for idle")
	}
	v := o.View()
	if len(v.Components) != 1 || v.Components[0].Name != "kubelet" {
		t.Errorf("components %+v, want kubelet alone", v.Components)
	}
	p := htmlreport.Density(Output{Report: Report{Node: "n", Counts: []int{0, 4}, Trials: 3}}.View(), "x", "test")
	if !strings.Contains(p.Thin, "No step was measured") {
		t.Errorf("banner of a run without steps: %q", p.Thin)
	}
}
