package htmlreport

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// densityRun is a run of three pod counts in one trial: kubelet's CPU on the line 1 + 0.5 × pods with the
// slope's interval [0.25, 1]; the pause processes' private memory 1 MiB a pod and no CPU; a component
// that held no memory.
func densityRun() DensityRun {
	steps := []DensityStep{{Trial: 1, Pods: 8, Seconds: 6}, {Trial: 1, Pods: 0, Seconds: 6}, {Trial: 1, Pods: 4, Seconds: 6, Warnings: []string{"sample 3: a process vanished"}}}
	fit := DensityFit{Fixed: 1, Marginal: 0.5, Lo: 0.25, Hi: 1, R2: 0.98, N: 3}
	return DensityRun{Node: "vm", Image: "pause", Counts: []int{0, 4, 8}, Trials: 1, Window: "6s", Took: "40s", Steps: steps,
		Busy: DensitySeries{Values: []float64{50, 40, 46}, Fit: DensityFit{Fixed: 40, Marginal: 1.2, Lo: 1, Hi: 1.5, R2: 0.9, N: 3}},
		Components: []DensityComponent{
			{Name: "kubelet", ChargedTo: "outside the pod cgroups", CPU: DensitySeries{Values: []float64{5.2, 0.9, 3.1}, Fit: fit},
				Private: DensitySeries{Values: []float64{80 << 20, 80 << 20, 80 << 20}, Fit: DensityFit{Fixed: 80 << 20, Lo: 0, Hi: 0, R2: 1, N: 3}}},
			{Name: "pause", ChargedTo: "pod cgroup", CPU: DensitySeries{Values: []float64{0, 0, 0}, Fit: DensityFit{R2: 1, N: 3}},
				Private: DensitySeries{Values: []float64{8 << 20, 0, 4 << 20}, Fit: DensityFit{Marginal: 1 << 20, Lo: 1 << 20, Hi: 1 << 20, R2: 1, N: 3}}},
			{Name: "kernel threads", ChargedTo: "outside the pod cgroups", CPU: DensitySeries{Values: []float64{2, 2, 2}, Fit: DensityFit{Fixed: 2, R2: 1, N: 3}},
				Private: DensitySeries{Values: []float64{0, 0, 0}, Fit: DensityFit{R2: 1, N: 3}}},
		},
		Outside: DensityOutside{From: []string{"kubelet"}, CPU: DensitySeries{Values: []float64{5.2, 0.9, 3.1}, Fit: fit},
			Private: DensitySeries{Values: []float64{80 << 20, 80 << 20, 80 << 20}, Fit: DensityFit{Fixed: 80 << 20, R2: 1, N: 3}}, ChargedCPU: 1, ChargedPrivate: 0},
		RuntimeClass: "apiVersion: node.k8s.io/v1\nkind: RuntimeClass\noverhead:\n  podFixed:\n    cpu: 1m\n",
		Warnings:     []DensityWarning{{Code: "other-node", Figure: "steps", Message: "tare measures this machine (a) and the pods run on node vm"}},
	}
}

// scatterCharts are the page's charts of kind scatterfit, by ID.
func scatterCharts(p Page) map[string]scatterFitData {
	out := map[string]scatterFitData{}
	for _, c := range chartsOfKind(p, "scatterfit") {
		out[c.ID] = c.Data.(scatterFitData)
	}
	return out
}

// TestDensityScatterFit: kubelet's CPU chart has a dot per step as measured, the line from the fewest to
// the most pods, and the band between the lines of slopes 0.25 and 1 through the line at the steps' mean
// pod count (4), where they cross; memory is drawn in MiB.
func TestDensityScatterFit(t *testing.T) {
	t.Parallel()
	charts := scatterCharts(Density(densityRun(), "x", "test"))
	want := scatterFitData{Name: "kubelet", Unit: "millicores", Caption: "1.00m at 0 pods, 0.50m per pod [95% CI 0.25m, 1.00m], R² 0.98, n = 3",
		Points: []fitPoint{{Pods: 8, Value: 5.2, Trial: 1}, {Pods: 0, Value: 0.9, Trial: 1}, {Pods: 4, Value: 3.1, Trial: 1}},
		Line:   [][2]float64{{0, 1}, {8, 5}},
		// at 0: 3 + 0.25 × −4 = 2 and 3 + 1 × −4 = −1; at 8: 3 + 0.25 × 4 = 4 and 3 + 4 = 7.
		Band: [][3]float64{{0, -1, 2}, {4, 3, 3}, {8, 4, 7}}}
	if diff := cmp.Diff(want, charts["chart-cpu-0"]); diff != "" {
		t.Errorf("kubelet's CPU chart (-want +got):\n%s", diff)
	}
	pause := charts["chart-memory-1"]
	if diff := cmp.Diff([]fitPoint{{Pods: 8, Value: 8, Trial: 1}, {Pods: 0, Value: 0, Trial: 1}, {Pods: 4, Value: 4, Trial: 1}}, pause.Points); diff != "" {
		t.Errorf("pause's memory in MiB (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([][2]float64{{0, 0}, {8, 8}}, pause.Line); diff != "" || pause.Unit != "MiB" || !strings.HasPrefix(pause.Caption, "0.00 MiB at 0 pods, 1.00 MiB per pod") {
		t.Errorf("pause's memory line (-want +got):\n%s\n%s %q", diff, pause.Unit, pause.Caption)
	}
}

// TestDensityChartsLeftOut: a component with no CPU at any step (pause) has no CPU chart, one with no
// memory (kernel threads) no memory chart; node busy and the components outside the pod cgroups
// together have both.
func TestDensityChartsLeftOut(t *testing.T) {
	t.Parallel()
	var ids []string
	for id := range scatterCharts(Density(densityRun(), "x", "test")) {
		ids = append(ids, id)
	}
	want := []string{"chart-cpu-0", "chart-cpu-2", "chart-cpu-busy", "chart-memory-0", "chart-memory-1", "chart-outside-cpu", "chart-outside-private"}
	if diff := cmp.Diff(want, ids, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
		t.Errorf("charts (-want +got):\n%s", diff)
	}
}

// TestDensityNoLine: without a fitted line (one pod count, or NaN) a chart has its dots only, a value
// that is not finite is left out, and the page still encodes (JSON has no NaN).
func TestDensityNoLine(t *testing.T) {
	t.Parallel()
	r := densityRun()
	nan := math.NaN()
	r.Components[0].CPU = DensitySeries{Values: []float64{5, nan, 3}, Fit: DensityFit{Fixed: nan, Marginal: nan, Lo: nan, Hi: nan, R2: nan, N: 3}}
	r.Busy.Fit.Lo, r.Busy.Fit.Hi = nan, nan
	p := Density(r, "x", "test")
	charts := scatterCharts(p)
	k := charts["chart-cpu-0"]
	if len(k.Points) != 2 || k.Line != nil || k.Band != nil || !strings.Contains(k.Caption, "no line") {
		t.Errorf("kubelet without a line: %+v", k)
	}
	if b := charts["chart-cpu-busy"]; b.Line == nil || b.Band != nil {
		t.Errorf("node busy without an interval: line %v, band %v", b.Line, b.Band)
	}
	var b bytes.Buffer
	if err := Write(&b, p); err != nil {
		t.Fatal(err)
	}
}

// TestDensityThin: the banner says when no step was measured (and the page has no chart), when one pod
// count was (no line), and when the run stopped before its last step; a whole run has none.
func TestDensityThin(t *testing.T) {
	t.Parallel()
	whole := densityRun()
	one := densityRun()
	one.Steps = one.Steps[:1]
	cut := densityRun()
	cut.Trials = 2
	for _, c := range []struct {
		name string
		run  DensityRun
		want string
	}{
		{"no step", DensityRun{Node: "vm", Counts: []int{0, 10}, Trials: 3}, "No step was measured"},
		{"one count", one, "Only one pod count was measured (8 pods, 1 step(s))"},
		{"cut short", cut, "stopped after 3 of its 6 steps"},
		{"whole", whole, ""},
	} {
		p := Density(c.run, "x", "test")
		if c.want == "" && p.Thin != "" || !strings.Contains(p.Thin, c.want) {
			t.Errorf("%s: banner %q, want it to say %q", c.name, p.Thin, c.want)
		}
		var b bytes.Buffer
		if err := Write(&b, p); err != nil || !strings.Contains(b.String(), c.want) {
			t.Errorf("%s: %v; the page lacks the banner", c.name, err)
		}
	}
	if p := Density(DensityRun{Counts: []int{0, 10}, Trials: 3}, "x", "test"); len(chartsOfKind(p, "scatterfit")) != 0 {
		t.Error("a run without steps has a chart")
	}
}

// TestDensityTables: the page holds the text table's rows, the RuntimeClass as preformatted text, every
// step, and the warnings, the run's as a card.
func TestDensityTables(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	if err := Write(&b, Density(densityRun(), "tare density with kubeconfig x", "test")); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	for _, want := range []string{
		`<td>kubelet</td><td>outside the pod cgroups</td><td class="num">1.00m</td><td class="num">0.50m [0.25m, 1.00m]</td><td class="num">0.98</td>`,
		`<td>node busy</td><td></td><td class="num">40.00m</td><td class="num">1.20m [1.00m, 1.50m]</td>`,
		"<pre class=\"code\">apiVersion: node.k8s.io/v1\nkind: RuntimeClass\noverhead:\n  podFixed:\n    cpu: 1m\n</pre>",
		`<td class="num">3</td><td class="num">1</td><td class="num">4</td><td class="num">6.0 s</td><td class="num">46m</td><td>sample 3: a process vanished</td>`,
		"Step 3 (trial 1, 4 pods): sample 3: a process vanished",
		`<div class="card warn"><div class="label">warning</div><div class="value">other-node</div>`,
		"Warning (other-node): tare measures this machine (a)",
	} {
		if !strings.Contains(html, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
}

// TestDensitySpikesSection: the percentile reservation's rows carry the value, its interval ("unbounded"
// for an infinite end), the mean and the slope; the memory and the measured allocatable follow; a run
// without any of them has no such section.
func TestDensitySpikesSection(t *testing.T) {
	t.Parallel()
	if s := sectionByID(Density(densityRun(), "x", "test"), "spikes"); s != nil {
		t.Errorf("a run without a percentile reservation has a spikes section: %+v", s)
	}
	r := densityRun()
	r.Spikes = &DensitySpikes{Percentile: 99.9, MaxPods: 110, ChurnRate: 0.5,
		Kube:   DensitySpike{CPU: 212.34, Lo: 180, Hi: 250.5, Mean: 120, Slope: 0.75, Seconds: 360, From: []string{"kubelet", "containerd"}},
		System: DensitySpike{CPU: 40, Lo: 30, Hi: math.Inf(1), Mean: 20, Slope: 0, Seconds: 360, From: []string{"systemd"}}}
	r.Memory = &DensityMemory{MaxPods: 110, Peak: 400 << 20, Slope: 1 << 20, Kube: 250 << 20, System: 150 << 20, EvictionHard: 100 << 20, EvictionFrom: "the kubelet's configz", Windows: 6}
	r.Allocatable = []DensityAllocatableRow{{Name: "capacity", CPU: "2", Memory: "8Gi", Pods: "110"}, {Name: "allocatable", CPU: "1748m", Memory: "7Gi", Pods: "110"}}
	s := sectionByID(Density(r, "x", "test"), "spikes")
	if s == nil || len(s.Tables) != 3 {
		t.Fatalf("spikes section %+v: want three tables", s)
	}
	if c := s.Tables[0].Caption; !strings.Contains(c, "p99.9 of 1 s demand at 110 pods") || !strings.Contains(c, "pod starts at 0.5/s") {
		t.Errorf("caption %q", c)
	}
	want := [][]string{
		{"kube-reserved", "212.3m", "[180.0m, 250.5m]", "120.0m", "0.75m", "360", "kubelet, containerd"},
		{"system-reserved", "40.0m", "[30.0m, unbounded]", "20.0m", "0.00m", "360", "systemd"},
	}
	if diff := cmp.Diff(want, s.Tables[0].Rows); diff != "" {
		t.Errorf("CPU rows (-want +got):\n%s", diff)
	}
	if got := s.Tables[1].Rows; len(got) != 4 || got[0][1] != "400 MiB" || got[3][2] != "the kubelet's configz" {
		t.Errorf("memory rows %v", got)
	}
	if got := s.Tables[2].Rows; len(got) != 2 || got[1][1] != "1748m" {
		t.Errorf("allocatable rows %v", got)
	}
}

// sectionByID is the page's section with the ID, nil without one.
func sectionByID(p Page, id string) *Section {
	for i := range p.Sections {
		if p.Sections[i].ID == id {
			return &p.Sections[i]
		}
	}
	return nil
}
