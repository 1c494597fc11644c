package datapath

import (
	"fmt"
	"maps"
	"slices"

	"github.com/tare-dev/tare/internal/htmlreport"
	"github.com/tare-dev/tare/internal/session"
)

// View is the run as its HTML page shows it (htmlreport.Datapath): per mode and message size, each
// path's finished trials' figures and its ratios, as the table groups them; every trial; what was not
// measured and the warnings.
func (r Report) View() htmlreport.DatapathRun {
	v := htmlreport.DatapathRun{Verb: "net", Lane: "path", Node: r.Node, RemoteNode: r.RemoteNode, Baseline: r.Baseline, Took: r.Took,
		Cancelled: r.Cancelled, Alpha: Alpha, Sweep: "message size",
		Setup: fmt.Sprintf("%d round(s) of %s trials in shuffled order (--seed %d), %d stream(s)", r.Rounds, r.Duration, r.Seed, r.Parallel)}
	pageRows[Trial, Lane, Ratio]{
		groups: lanesByModeSize(r.Lanes),
		head: func(g []Lane) htmlreport.DatapathGroup {
			m, size := g[0].Mode, FormatSize(g[0].Size)
			vg := htmlreport.DatapathGroup{Name: fmt.Sprintf("%s, %s messages", m, size), Chart: string(m), Value: size}
			for _, x := range metricsOf(m) {
				vg.Figures = append(vg.Figures, htmlreport.DatapathFigure{Name: x.Name, Title: x.Title, Unit: x.Unit})
			}
			return vg
		},
		trials: r.Trials,
		ratios: r.Ratios,
		of:     func(q Ratio, l Lane) bool { return q.Path == l.Label() && q.Mode == l.Mode && q.Size == l.Size },
	}.fill(&v)
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
	pageRows[DiskTrial, DiskLane, DiskRatio]{
		groups: diskGroups(r.Lanes),
		head: func(g []DiskLane) htmlreport.DatapathGroup {
			name := groupName(g[0].RW, g[0].BS, g[0].IODepth)
			return htmlreport.DatapathGroup{Name: name, Value: name, Figures: figures}
		},
		trials: r.Trials,
		ratios: r.Ratios,
		of: func(q DiskRatio, l DiskLane) bool {
			return q.Target == l.Label() && q.RW == l.RW && q.BS == l.BS && q.IODepth == l.IODepth
		},
	}.fill(&v)
	if failed := diskFailures(r.Trials); failed != "" {
		v.Notes = append(v.Notes, "Failed trials (left out): "+failed)
	}
	return v
}

// pageRows is what a run's page lists, whichever tool ran it (T its trial, L its lane, R its ratio): the
// groups of lanes and every trial.
type pageRows[T pageTrial[L], L pageLane, R pageRatio] struct {
	groups [][]L
	head   func(g []L) htmlreport.DatapathGroup // the group's name, value, chart and figures
	trials []T
	ratios []R
	of     func(q R, l L) bool // whether q compares lane l
}

// pageTrial is a trial the page lists (Trial, DiskTrial).
type pageTrial[L comparable] interface{ row() trialRow[L] }

// pageLane is a lane the page lists (Lane, DiskLane).
type pageLane interface {
	comparable
	Label() string
}

// pageRatio is a ratio the page lists (Ratio, DiskRatio).
type pageRatio interface {
	view() htmlreport.DatapathRatio
}

// trialRow is what the page says of one trial.
type trialRow[L comparable] struct {
	seq, round int
	lane       L
	nodeBusy   float64 // millicores
	err        string
	warnings   []session.Warning
	figures    []float64 // in the order of its group's figures (shown only when the trial finished)
}

func (t Trial) row() trialRow[Lane] {
	r := trialRow[Lane]{seq: t.Seq, round: t.Round, lane: t.Lane, nodeBusy: t.NodeBusy, err: t.Error, warnings: t.Warnings}
	for _, x := range metricsOf(t.Lane.Mode) {
		r.figures = append(r.figures, x.value(t))
	}
	return r
}

func (t DiskTrial) row() trialRow[DiskLane] {
	r := trialRow[DiskLane]{seq: t.Seq, round: t.Round, lane: t.Lane, nodeBusy: t.NodeBusy, err: t.Error, warnings: t.Warnings}
	for _, m := range diskMetrics {
		r.figures = append(r.figures, m.value(t))
	}
	return r
}

// fill adds to v each group (as head makes it) with a row per lane: each figure's values over the lane's
// finished trials, in the order run, and the lane's ratios; then every trial in the order run, with its
// group's index (-1 when its lane is in no group), a finished trial's figures and its warnings.
func (p pageRows[T, L, R]) fill(v *htmlreport.DatapathRun) {
	rows := make([]trialRow[L], len(p.trials))
	for i, t := range p.trials {
		rows[i] = t.row()
	}
	group := map[L]int{}
	for _, g := range p.groups {
		vg := p.head(g)
		for _, l := range g {
			group[l] = len(v.Groups)
			vl := htmlreport.DatapathLane{Label: l.Label(), Values: make([][]float64, len(vg.Figures))}
			for _, t := range rows {
				if t.err == "" && t.lane == l {
					for i, x := range t.figures {
						vl.Values[i] = append(vl.Values[i], x)
					}
				}
			}
			for _, q := range p.ratios {
				if p.of(q, l) {
					vl.Ratios = append(vl.Ratios, q.view())
				}
			}
			vg.Lanes = append(vg.Lanes, vl)
		}
		v.Groups = append(v.Groups, vg)
	}
	for _, t := range rows {
		vt := htmlreport.DatapathTrial{Seq: t.seq, Round: t.round, Lane: t.lane.Label(), Group: -1, NodeBusy: t.nodeBusy, Error: t.err}
		if i, ok := group[t.lane]; ok {
			vt.Group = i
		}
		if t.err == "" {
			vt.Values = t.figures
		}
		for _, w := range t.warnings {
			vt.Warnings = append(vt.Warnings, w.String())
		}
		v.Trials = append(v.Trials, vt)
	}
}

func (q Ratio) view() htmlreport.DatapathRatio     { return q.Shift.view(q.Metric, q.Against) }
func (q DiskRatio) view() htmlreport.DatapathRatio { return q.Shift.view(q.Metric, q.Against) }

// view is the shift of figure metric against a baseline, as the page shows it.
func (s Shift) view(metric, against string) htmlreport.DatapathRatio {
	return htmlreport.DatapathRatio{Figure: metric, Against: against, Ratio: s.Ratio, Lo: s.Lo, Hi: s.Hi, Level: s.Level, P: s.P, MinP: s.MinP,
		Significant: s.Significant, N: s.N, NBase: s.NBase}
}
