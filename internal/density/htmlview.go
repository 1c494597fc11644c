package density

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/tare-dev/tare/internal/htmlreport"
)

// View is the run as its HTML page shows it (htmlreport.Density): every step's node busy and the values of
// each component the table lists, in its order, with the lines fitted to them; the per-step sums of the
// components outside the pod cgroups that the RuntimeClass charges, with their lines; the kube-reserved
// comparison; the percentile reservation, the eviction manager's memory and the measured allocatable; the
// RuntimeClass as YAML; the warnings. The values are those the model was fitted to.
func (o Output) View() htmlreport.DensityRun {
	v := htmlreport.DensityRun{Node: o.Node, Image: o.podImage(), Counts: o.Counts, Trials: o.Trials, Window: o.Window, Seed: o.Seed, Took: o.Took}
	m := o.Model
	busy := make([]float64, len(o.Steps))
	for i, w := range o.Steps {
		busy[i] = w.Busy
		st := htmlreport.DensityStep{Trial: w.Trial, Pods: w.Pods, Seconds: w.Seconds}
		for _, x := range w.Warnings {
			st.Warnings = append(st.Warnings, x.String())
		}
		v.Steps = append(v.Steps, st)
	}
	v.Busy = htmlreport.DensitySeries{Values: busy, Fit: fitView(m.Busy)}
	cpu := func(x Cost) float64 { return x.CPU }
	private := func(x Cost) float64 { return x.Private }
	for _, c := range m.Components {
		if !c.listed() {
			continue
		}
		names := []string{c.Name}
		v.Components = append(v.Components, htmlreport.DensityComponent{Name: c.Name, Role: c.Role, ChargedTo: c.ChargedTo,
			CPU:     htmlreport.DensitySeries{Values: sumOver(o.Steps, names, cpu), Fit: fitView(c.CPU)},
			Private: htmlreport.DensitySeries{Values: sumOver(o.Steps, names, private), Fit: fitView(c.Private)},
			PSS:     fitView(c.PSS), RSS: fitView(c.RSS)})
	}
	v.Outside = htmlreport.DensityOutside{From: m.OverheadFrom,
		CPU:        htmlreport.DensitySeries{Values: sumOver(o.Steps, m.OverheadFrom, cpu), Fit: fitView(m.OverheadCPU)},
		Private:    htmlreport.DensitySeries{Values: sumOver(o.Steps, m.OverheadFrom, private), Fit: fitView(m.OverheadPrivate)},
		ChargedCPU: m.Overhead.CPU, ChargedPrivate: m.Overhead.Private}
	if r := o.KubeReserved; r != nil {
		vr := &htmlreport.DensityReserved{MaxPods: r.MaxPods, CPUs: r.CPUs, MemoryBytes: r.MemoryBytes, From: r.From, Extrapolated: r.Extrapolated,
			Measured: reservationView(r.Measured), Mean: reservationView(r.Mean)}
		for _, p := range r.Providers {
			vr.Providers = append(vr.Providers, reservationView(p))
		}
		v.Reserved = vr
	}
	if sp := o.Spikes; sp != nil {
		v.Spikes = &htmlreport.DensitySpikes{Percentile: sp.Percentile, MaxPods: sp.MaxPods, ChurnRate: sp.ChurnRate,
			Kube: spikeView(sp.Kube), System: spikeView(sp.System)}
	}
	if m := o.Memory; m != nil {
		v.Memory = &htmlreport.DensityMemory{MaxPods: m.MaxPods, Peak: m.Peak, Slope: m.Slope, Kube: m.Kube, System: m.System,
			EvictionHard: m.EvictionHard, EvictionFrom: m.EvictionFrom, Windows: m.N}
	}
	if a := o.Allocatable; a != nil {
		for _, x := range []struct {
			name string
			l    corev1.ResourceList
		}{{"capacity", a.Capacity}, {"kube-reserved", a.KubeReserved}, {"system-reserved", a.SystemReserved},
			{"evictionHard", a.EvictionHard}, {"allocatable", a.Allocatable}} {
			v.Allocatable = append(v.Allocatable, htmlreport.DensityAllocatableRow{Name: x.name,
				CPU: quantityText(x.l, corev1.ResourceCPU), Memory: quantityText(x.l, corev1.ResourceMemory), Pods: quantityText(x.l, corev1.ResourcePods)})
		}
	}
	for _, w := range o.Warnings {
		v.Warnings = append(v.Warnings, htmlreport.DensityWarning{Code: w.Code, Figure: w.Figure, Message: w.Message})
	}
	if o.RuntimeClass != nil {
		y, err := runtimeClassYAML(o.RuntimeClass)
		if err != nil {
			v.Warnings = append(v.Warnings, htmlreport.DensityWarning{Code: "runtime-class", Figure: "runtime_class",
				Message: fmt.Sprintf("the RuntimeClass could not be written as YAML: %v", err)})
		}
		v.RuntimeClass = y
	}
	if c := o.Churn; c != nil {
		hc := &htmlreport.DensityChurn{Rate: c.Rate, Base: c.Base, Windows: len(c.Windows)}
		hc.Measured, _ = c.Measured()
		for _, x := range append([]StartCost{c.Busy}, c.shown()...) {
			hc.Rows = append(hc.Rows, htmlreport.DensityStartCost{Name: x.Name, N: x.N, CPUms: x.CPUms, Lo: x.Lo, Hi: x.Hi, Level: x.Level, P: x.P, Significant: x.Significant})
		}
		v.Churn = hc
	}
	return v
}

func fitView(f Fit) htmlreport.DensityFit {
	return htmlreport.DensityFit{Fixed: f.Fixed, Marginal: f.Marginal, Lo: f.Lo, Hi: f.Hi, R2: f.R2, N: f.N}
}

func reservationView(r Reservation) htmlreport.DensityReservation {
	return htmlreport.DensityReservation{Name: r.Name, CPU: r.CPU, Memory: r.Memory, Formula: r.Formula}
}

func spikeView(s Spike) htmlreport.DensitySpike {
	return htmlreport.DensitySpike{CPU: s.CPU.Value, Lo: s.CPU.Lo, Hi: s.CPU.Hi, Mean: s.Mean, Slope: s.Slope, Seconds: s.CPU.N, From: s.From}
}

// quantityText is a resource's quantity as the measured allocatable writes it, "–" when it has none.
func quantityText(l corev1.ResourceList, name corev1.ResourceName) string {
	if q, ok := l[name]; ok {
		return q.String()
	}
	return "–"
}
