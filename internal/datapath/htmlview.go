package datapath

import (
	"fmt"
	"maps"
	"slices"

	"github.com/tare-dev/tare/internal/htmlreport"
)

// View is the run as its HTML page shows it (htmlreport.Datapath): per mode and message size, each
// path's finished trials' figures and its ratios, as the table groups them; every trial; what was not
// measured and the warnings.
func (r Report) View() htmlreport.DatapathRun {
	v := htmlreport.DatapathRun{Verb: "net", Lane: "path", Node: r.Node, RemoteNode: r.RemoteNode, Baseline: r.Baseline, Took: r.Took,
		Cancelled: r.Cancelled, Alpha: Alpha, Sweep: "message size",
		Setup: fmt.Sprintf("%d round(s) of %s trials in shuffled order (--seed %d), %d stream(s)", r.Rounds, r.Duration, r.Seed, r.Parallel)}
	group := map[Lane]int{}
	for _, g := range lanesByModeSize(r.Lanes) {
		m, size := g[0].Mode, FormatSize(g[0].Size)
		metrics := metricsOf(m)
		vg := htmlreport.DatapathGroup{Name: fmt.Sprintf("%s, %s messages", m, size), Chart: string(m), Value: size}
		for _, x := range metrics {
			vg.Figures = append(vg.Figures, htmlreport.DatapathFigure{Name: x.Name, Title: metricTitle(x.Name, m), Unit: x.Unit})
		}
		for _, l := range g {
			group[l] = len(v.Groups)
			ts := trialsOf(r.Trials, l)
			vl := htmlreport.DatapathLane{Label: l.Label()}
			for _, x := range metrics {
				vl.Values = append(vl.Values, values(ts, x))
			}
			for _, q := range r.Ratios {
				if q.Path == l.Label() && q.Mode == l.Mode && q.Size == l.Size {
					vl.Ratios = append(vl.Ratios, ratioView(q.Metric, q.Against, q.Shift))
				}
			}
			vg.Lanes = append(vg.Lanes, vl)
		}
		v.Groups = append(v.Groups, vg)
	}
	for _, t := range r.Trials {
		vt := htmlreport.DatapathTrial{Seq: t.Seq, Round: t.Round, Lane: t.Lane.Label(), Group: -1, NodeBusy: t.NodeBusy, Error: t.Error}
		if i, ok := group[t.Lane]; ok {
			vt.Group = i
		}
		if t.Error == "" {
			for _, x := range metricsOf(t.Lane.Mode) {
				vt.Values = append(vt.Values, x.value(t))
			}
		}
		for _, w := range t.Warnings {
			vt.Warnings = append(vt.Warnings, w.String())
		}
		v.Trials = append(v.Trials, vt)
	}
	for _, p := range slices.Sorted(maps.Keys(r.Skipped)) {
		v.Notes = append(v.Notes, fmt.Sprintf("Not measured: %s: %s", p, r.Skipped[p]))
	}
	if mtus := pathMTUs(r); mtus != "" {
		v.Notes = append(v.Notes, "Path MTU: "+mtus)
	}
	if failed := failures(r.Trials); failed != "" {
		v.Notes = append(v.Notes, "Failed trials (left out): "+failed)
	}
	if failed := failedTransactions(r.Trials); failed != "" {
		v.Notes = append(v.Notes, "Failed transactions (left out of the trials' figures): "+failed)
	}
	for _, w := range r.Warnings {
		v.Notes = append(v.Notes, fmt.Sprintf("Warning (%s): %s", w.Code, w.Message))
	}
	return v
}

// View is the disk run as its HTML page shows it (htmlreport.Datapath): its targets, then per pattern,
// block size and depth each target's finished trials' figures and its ratios, as the table groups them;
// every trial.
func (r DiskReport) View() htmlreport.DatapathRun {
	v := htmlreport.DatapathRun{Verb: "disk", Lane: "target", Node: r.Node, Baseline: r.Baseline, Took: r.Took, Cancelled: r.Cancelled, Alpha: Alpha,
		Setup: fmt.Sprintf("%d round(s) of %s fio trials in shuffled order (--seed %d), one %d MiB file per target", r.Rounds, r.Duration, r.Seed, r.Size>>20)}
	for _, t := range r.Targets {
		v.Targets = append(v.Targets, htmlreport.DatapathTarget{Target: t.Target, File: t.File, FSType: t.FSType, Device: t.Device, SameDevice: t.SameDevice, IO: t.IO()})
	}
	var figures []htmlreport.DatapathFigure
	for _, m := range diskMetrics {
		figures = append(figures, htmlreport.DatapathFigure{Name: m.Name, Title: m.Title, Unit: m.Unit})
	}
	group := map[DiskLane]int{}
	for _, g := range diskGroups(r.Lanes) {
		name := groupName(g[0].RW, g[0].BS, g[0].IODepth)
		vg := htmlreport.DatapathGroup{Name: name, Value: name, Figures: figures}
		for _, l := range g {
			group[l] = len(v.Groups)
			ts := diskTrialsOf(r.Trials, l)
			vl := htmlreport.DatapathLane{Label: l.Label()}
			for _, m := range diskMetrics {
				vl.Values = append(vl.Values, diskValues(ts, m))
			}
			for _, q := range r.Ratios {
				if q.Target == l.Label() && q.RW == l.RW && q.BS == l.BS && q.IODepth == l.IODepth {
					vl.Ratios = append(vl.Ratios, ratioView(q.Metric, q.Against, q.Shift))
				}
			}
			vg.Lanes = append(vg.Lanes, vl)
		}
		v.Groups = append(v.Groups, vg)
	}
	for _, t := range r.Trials {
		vt := htmlreport.DatapathTrial{Seq: t.Seq, Round: t.Round, Lane: t.Lane.Label(), Group: -1, NodeBusy: t.NodeBusy, Error: t.Error}
		if i, ok := group[t.Lane]; ok {
			vt.Group = i
		}
		if t.Error == "" {
			for _, m := range diskMetrics {
				vt.Values = append(vt.Values, m.value(t))
			}
		}
		for _, w := range t.Warnings {
			vt.Warnings = append(vt.Warnings, w.String())
		}
		v.Trials = append(v.Trials, vt)
	}
	if failed := diskFailures(r.Trials); failed != "" {
		v.Notes = append(v.Notes, "Failed trials (left out): "+failed)
	}
	return v
}

func ratioView(metric, against string, s Shift) htmlreport.DatapathRatio {
	return htmlreport.DatapathRatio{Figure: metric, Against: against, Ratio: s.Ratio, Lo: s.Lo, Hi: s.Hi, Level: s.Level, P: s.P, MinP: s.MinP,
		Significant: s.Significant, N: s.N, NBase: s.NBase}
}
