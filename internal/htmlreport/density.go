package htmlreport

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tare-dev/tare/internal/output"
)

// Density is the page of a tare density run: headline cards; the text table's per-component model; each
// component's CPU and private memory at every step against the pod count (and node busy's), with the
// fitted line and its slope's interval; the per-pod cost outside the pod cgroups and the RuntimeClass made
// from it; the kube-reserved comparison; the reservation at a percentile of 1 s demand, the memory the
// eviction manager counts and the measured allocatable; every step; the warnings. what says what ran and with what
// ("tare density with kubeconfig /root/.kube/config").
func Density(r DensityRun, what, version string) Page {
	p := Page{Title: "tare density: what one more pod costs node " + orDash(r.Node),
		Subtitle: fmt.Sprintf("%s · idle pods of %s · %s windows · took %s", what, orDash(r.Image), orDash(r.Window), orDash(r.Took)),
		Thin:     densityThin(r), Cards: densityCards(r), Version: version, Made: time.Now()}
	if len(r.Steps) > 0 {
		p.Sections = append(p.Sections, densityModelSection(r))
		if s, ok := densityCPUSection(r); ok {
			p.Sections = append(p.Sections, s)
		}
		if s, ok := densityMemorySection(r); ok {
			p.Sections = append(p.Sections, s)
		}
		p.Sections = append(p.Sections, densityOutsideSection(r))
		if r.Churn != nil {
			p.Sections = append(p.Sections, densityChurnSection(*r.Churn))
		}
		if r.Reserved != nil {
			p.Sections = append(p.Sections, densityReservedSection(*r.Reserved))
		}
		if r.Spikes != nil || r.Memory != nil || len(r.Allocatable) > 0 {
			p.Sections = append(p.Sections, densitySpikesSection(r))
		}
		p.Sections = append(p.Sections, densityStepsSection(r))
	}
	if s, ok := densityWarningsSection(r); ok {
		p.Sections = append(p.Sections, s)
	}
	return p
}

// densityThin says why the run has little to show: no step, one pod count (no line), or fewer steps than
// planned (a run cut short); "" when every step was measured.
func densityThin(r DensityRun) string {
	var counts []int
	for _, st := range r.Steps {
		if !slices.Contains(counts, st.Pods) {
			counts = append(counts, st.Pods)
		}
	}
	planned := len(r.Counts) * r.Trials
	switch {
	case len(r.Steps) == 0:
		return "No step was measured: the run stopped before its first window ended. There is nothing to fit."
	case len(counts) < 2:
		return fmt.Sprintf("Only one pod count was measured (%d pods, %d step(s)): a line needs two, so none is fitted; the values measured are shown.", counts[0], len(r.Steps))
	case len(r.Steps) < planned:
		return fmt.Sprintf("The run stopped after %d of its %d steps: the lines are fitted to what was measured.", len(r.Steps), planned)
	}
	return ""
}

func densityCards(r DensityRun) []Card {
	counts := make([]string, len(r.Counts))
	for i, n := range r.Counts {
		counts[i] = fmt.Sprint(n)
	}
	cards := []Card{
		{Label: "node", Value: orDash(r.Node), Detail: "idle pods of " + orDash(r.Image)},
		{Label: "pod counts", Value: strings.Join(counts, ", "), Detail: fmt.Sprintf("each once per trial, in shuffled order (--seed %d)", r.Seed)},
		{Label: "trials", Value: fmt.Sprint(r.Trials), Detail: fmt.Sprintf("%d of %d steps measured", len(r.Steps), len(r.Counts)*r.Trials)},
		{Label: "window", Value: orDash(r.Window), Detail: "measured at each step"},
		{Label: "took", Value: orDash(r.Took)},
	}
	if len(r.Steps) > 0 {
		b := r.Busy.Fit
		cards = append(cards,
			Card{Label: "node busy per pod", Value: output.MillicoresFixed(b.Marginal, 2),
				Detail: fmt.Sprintf("95%% CI [%s, %s]; %s at 0 pods, R² %.2f", output.MillicoresFixed(b.Lo, 2), output.MillicoresFixed(b.Hi, 2), output.MillicoresFixed(b.Fixed, 2), b.R2)},
			Card{Label: "charged per pod", Value: fmt.Sprintf("%s, %s", output.MillicoresFixed(r.Outside.ChargedCPU, 2), output.MiBFixed(r.Outside.ChargedPrivate, 2)),
				Detail: "outside the pod cgroups, at the upper ends of the 95% intervals: the RuntimeClass's overhead before rounding up"})
	}
	for _, w := range r.Warnings {
		cards = append(cards, Card{Label: warningLabel, Value: w.Code, Detail: fmt.Sprintf("%s: %s", w.Figure, w.Message)})
	}
	return cards
}

// densityModelSection is the text table: a row per component (node busy first), its CPU at zero pods,
// CPU and private memory per pod with their intervals, PSS per pod, RSS at zero pods.
func densityModelSection(r DensityRun) Section {
	t := Table{Head: []string{"component", "charged to", "CPU at 0", "CPU per pod [95% CI]", "R²", "private per pod [95% CI]", "PSS per pod", "RSS at 0"},
		Right: []bool{false, false, true, true, true, true, true, true}}
	mc := func(v float64) string { return output.MillicoresFixed(v, 2) }
	mem := func(v float64) string { return output.MiBFixed(v, 2) }
	b := r.Busy.Fit
	t.Rows = append(t.Rows, []string{"node busy", "", mc(b.Fixed), fmt.Sprintf("%s [%s, %s]", mc(b.Marginal), mc(b.Lo), mc(b.Hi)), fmt.Sprintf("%.2f", b.R2), "", "", ""})
	for _, c := range r.Components {
		t.Rows = append(t.Rows, []string{c.Name, c.ChargedTo, mc(c.CPU.Fit.Fixed), fmt.Sprintf("%s [%s, %s]", mc(c.CPU.Fit.Marginal), mc(c.CPU.Fit.Lo), mc(c.CPU.Fit.Hi)),
			fmt.Sprintf("%.2f", c.CPU.Fit.R2), fmt.Sprintf("%s [%s, %s]", mem(c.Private.Fit.Marginal), mem(c.Private.Fit.Lo), mem(c.Private.Fit.Hi)),
			mem(c.PSS.Marginal), mem(c.RSS.Fixed)})
	}
	return Section{ID: "model", Title: "Per component",
		Intro: fmt.Sprintf("Each component's cost against the pod count, fitted to its values at the %d steps with a Theil–Sen line (the median of the slopes between every two steps at different pod counts): the cost at zero pods, the cost of each more pod with the 95%% bootstrap interval of that slope, and R². R² below zero: the line fits worse than the mean, which means noise and no trend. Charged to: in the pod cgroups, the pod's own accounting (requests, limits, kubectl top) sees the cost; outside them it does not.",
			len(r.Steps)),
		Tables: []Table{t}}
}

// bandIntro says how the charts of kind scatterfit read.
const bandIntro = "A dot per step, coloured by trial. The line is the fitted one, drawn over the pod counts measured; the shaded band lies between the lines whose slopes are the ends of the slope's 95% interval, both through the line at the steps' mean pod count: it shows how sure the cost per pod is, not the cost at zero pods. Hover a dot for its pods, value and trial."

func densityCPUSection(r DensityRun) (Section, bool) {
	s := Section{ID: "cpu", Title: "CPU against pods",
		Intro: "Node busy and each component's CPU (millicores, the mean over each step's window) against the pods on the node. " + bandIntro + " Components that used no CPU at any step are left out."}
	if c, ok := densityChart("chart-cpu-busy", "node busy: CPU (millicores)", "node busy", cpuUnit, r.Steps, r.Busy); ok {
		s.Charts = append(s.Charts, c)
	}
	for i, x := range r.Components {
		if c, ok := densityChart(fmt.Sprintf("chart-cpu-%d", i), x.Name+": CPU (millicores)", x.Name, cpuUnit, r.Steps, x.CPU); ok {
			s.Charts = append(s.Charts, c)
		}
	}
	return s, len(s.Charts) > 0
}

func densityMemorySection(r DensityRun) (Section, bool) {
	s := Section{ID: "memory", Title: "Private memory against pods",
		Intro: "Each component's private memory (MiB, the pages of its processes that no other process shares, from smaps_rollup; the mean over each step's window) against the pods on the node: the memory one more pod adds, which the RuntimeClass charges. " + bandIntro + " Components that held no private memory at any step are left out."}
	for i, x := range r.Components {
		if c, ok := densityChart(fmt.Sprintf("chart-memory-%d", i), x.Name+": private memory (MiB)", x.Name, memUnit, r.Steps, x.Private); ok {
			s.Charts = append(s.Charts, c)
		}
	}
	return s, len(s.Charts) > 0
}

// densityOutsideSection is the per-pod cost of the components outside the pod cgroups that the
// RuntimeClass charges: their summed values with the line through the sums, and the RuntimeClass.
func densityOutsideSection(r DensityRun) Section {
	o := r.Outside
	from := strings.Join(o.From, ", ")
	s := Section{ID: "outside", Title: "Per pod outside the pod cgroups"}
	if len(o.From) == 0 {
		s.Intro = "No component of the node's agents, runtime or per-pod runtime ran outside the pod cgroups: there is nothing for a RuntimeClass to charge."
		return s
	}
	s.Intro = fmt.Sprintf("%s run outside the pod cgroups, for the pods of this node: the pod's own accounting misses their cost. Their values summed at each step, with one line through the sums (so its interval is the total's). %s", from, bandIntro)
	if c, ok := densityChart("chart-outside-cpu", "outside the pod cgroups together: CPU (millicores)", from, cpuUnit, r.Steps, o.CPU); ok {
		s.Charts = append(s.Charts, c)
	}
	if c, ok := densityChart("chart-outside-private", "outside the pod cgroups together: private memory (MiB)", from, memUnit, r.Steps, o.Private); ok {
		s.Charts = append(s.Charts, c)
	}
	t := Table{Caption: from + " together", Head: []string{"figure", "at 0 pods", "per pod [95% CI]", "R²", "charged per pod"}, Right: []bool{false, true, true, true, true}}
	mc := func(v float64) string { return output.MillicoresFixed(v, 2) }
	mem := func(v float64) string { return output.MiBFixed(v, 2) }
	for _, x := range []struct {
		name    string
		f       DensityFit
		charged float64
		format  func(float64) string
	}{{"CPU", o.CPU.Fit, o.ChargedCPU, mc}, {"private memory", o.Private.Fit, o.ChargedPrivate, mem}} {
		t.Rows = append(t.Rows, []string{x.name, x.format(x.f.Fixed), fmt.Sprintf("%s [%s, %s]", x.format(x.f.Marginal), x.format(x.f.Lo), x.format(x.f.Hi)),
			fmt.Sprintf("%.2f", x.f.R2), x.format(x.charged)})
	}
	s.Tables = append(s.Tables, t)
	if r.RuntimeClass == "" {
		s.Items = append(s.Items, "No RuntimeClass: the per-pod overhead needs steps at two pod counts or more.")
		return s
	}
	s.Items = append(s.Items, "A RuntimeClass that charges it to every pod, at the intervals' upper ends, CPU rounded up to the millicore and memory to the MiB (kubectl apply -f -; pods opt in with runtimeClassName):")
	s.Code = r.RuntimeClass
	return s
}

// densityReservedSection is the kube-reserved recommendation beside the providers', with the difference
// of each.
func densityReservedSection(r DensityReserved) Section {
	t := Table{Caption: fmt.Sprintf("kube-reserved for %d pods on this node (%s CPUs, %s memory), from %s", r.MaxPods,
		fmt.Sprintf("%.4g", r.CPUs), output.MiBFixed(r.MemoryBytes, 0), strings.Join(r.From, ", ")),
		Head:  []string{"", "CPU", "memory (PSS)", "CPU vs measured", "memory vs measured", "formula"},
		Right: []bool{false, true, true, true, true, false}}
	for _, x := range []DensityReservation{r.Measured, r.Mean} {
		t.Rows = append(t.Rows, []string{x.Name, output.MillicoresFixed(x.CPU, 1), output.MiBFixed(x.Memory, 0), "", "", ""})
	}
	for _, p := range r.Providers {
		t.Rows = append(t.Rows, []string{p.Name, output.MillicoresFixed(p.CPU, 1), output.MiBFixed(p.Memory, 0),
			fmt.Sprintf("%+.1fm", p.CPU-r.Measured.CPU), fmt.Sprintf("%+.0f MiB", (p.Memory-r.Measured.Memory)/(1<<20)), p.Formula})
	}
	s := Section{ID: "kube-reserved", Title: "kube-reserved",
		Intro:  "The summed CPU and PSS of the components outside the pod cgroups, read off their line at the pod limit, at the upper end of the 95% interval of the line's value there (the recommendation) and at the line itself (the mean), beside what the EKS, GKE and AKS formulas reserve for a node of this size.",
		Tables: []Table{t}}
	if r.Extrapolated {
		s.Items = append(s.Items, fmt.Sprintf("%d pods lies beyond the largest count measured: the line is extrapolated; measure up to it with --pods to check.", r.MaxPods))
	}
	s.Items = append(s.Items, "Measured: the idle pods' cost, CPU as a mean; a node whose pods start and stop often needs more: --churn measures the CPU per pod start.")
	return s
}

// densitySpikesSection is what the node's daemons need at their busiest: CPU at a percentile of 1 s
// demand with its interval beside the mean of the same seconds, memory as the eviction manager counts it,
// and the measured allocatable they leave the pods.
func densitySpikesSection(r DensityRun) Section {
	s := Section{ID: "spikes", Title: "Reserved for the spikes, and what the pods get"}
	if sp := r.Spikes; sp != nil {
		caption := fmt.Sprintf("CPU at the p%s of 1 s demand at %d pods (each second moved to %d pods by the per-pod slope", output.Percentile(sp.Percentile), sp.MaxPods, sp.MaxPods)
		if sp.ChurnRate > 0 {
			caption += fmt.Sprintf("; plus pod starts at %g/s", sp.ChurnRate)
		}
		t := Table{Caption: caption + ")", Head: []string{"", "CPU", "95% interval", "mean", "per pod", "seconds", "from"},
			Right: []bool{false, true, true, true, true, true, false}}
		for _, x := range []struct {
			name string
			sp   DensitySpike
		}{{"kube-reserved", sp.Kube}, {"system-reserved", sp.System}} {
			t.Rows = append(t.Rows, []string{x.name, output.MillicoresEnd(x.sp.CPU), "[" + output.MillicoresEnd(x.sp.Lo) + ", " + output.MillicoresEnd(x.sp.Hi) + "]",
				output.MillicoresEnd(x.sp.Mean), output.MillicoresFixed(x.sp.Slope, 2), fmt.Sprint(x.sp.Seconds), strings.Join(x.sp.From, ", ")})
		}
		s.Tables = append(s.Tables, t)
		s.Items = append(s.Items, "The interval is the percentile's over the seconds (order statistics); an unbounded end means too few seconds were measured for it: measure longer windows or more trials.")
	}
	if m := r.Memory; m != nil {
		t := Table{Caption: fmt.Sprintf("Memory at %d pods, as the eviction manager counts it (working set: usage − inactive_file)", m.MaxPods),
			Head: []string{"", "memory", "how"}, Right: []bool{false, true, false}}
		t.Rows = append(t.Rows,
			[]string{"peak outside the pods' cgroup", output.MiBFixed(m.Peak, 0), fmt.Sprintf("largest of %d windows, %s per pod", m.Windows, output.MiBFixed(m.Slope, 2))},
			[]string{"kube-reserved", output.MiBFixed(m.Kube, 0), fmt.Sprintf("the components' PSS at %d pods", m.MaxPods)},
			[]string{"system-reserved", output.MiBFixed(m.System, 0), "the rest of the peak"},
			[]string{"evictionHard", output.MiBFixed(m.EvictionHard, 0), m.EvictionFrom})
		s.Tables = append(s.Tables, t)
	}
	if len(r.Allocatable) > 0 {
		t := Table{Caption: "Measured allocatable: capacity − kube-reserved − system-reserved − eviction (the document tare fit --allocatable reads)",
			Head: []string{"", "cpu", "memory", "pods"}, Right: []bool{false, true, true, true}}
		for _, x := range r.Allocatable {
			t.Rows = append(t.Rows, []string{x.Name, x.CPU, x.Memory, x.Pods})
		}
		s.Tables = append(s.Tables, t)
	}
	return s
}

func densityStepsSection(r DensityRun) Section {
	t := Table{Caption: "In the order measured", Head: []string{"#", "trial", "pods", "window", "node busy", "warnings"},
		Right: []bool{true, true, true, true, true, false}}
	for i, st := range r.Steps {
		busy := "–"
		if i < len(r.Busy.Values) {
			busy = output.Millicores(r.Busy.Values[i])
		}
		t.Rows = append(t.Rows, []string{fmt.Sprint(i + 1), fmt.Sprint(st.Trial), fmt.Sprint(st.Pods), fmt.Sprintf("%.1f s", st.Seconds), busy, strings.Join(st.Warnings, "; ")})
	}
	return Section{ID: "steps", Title: "Steps", Intro: "Every measured window, each count once per trial in shuffled order, so that a drift of the node over the run is not mistaken for an effect of the pod count.",
		Tables: []Table{t}}
}

// densityWarningsSection lists the report's warnings and each step's.
func densityWarningsSection(r DensityRun) (Section, bool) {
	s := Section{ID: "warnings", Title: "Warnings"}
	for _, w := range r.Warnings {
		s.Items = append(s.Items, fmt.Sprintf("Warning (%s): %s", w.Code, w.Message))
	}
	for i, st := range r.Steps {
		for _, w := range st.Warnings {
			s.Items = append(s.Items, fmt.Sprintf("Step %d (trial %d, %d pods): %s", i+1, st.Trial, st.Pods, w))
		}
	}
	return s, len(s.Items) > 0
}
