package netpath

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/tare-dev/tare/internal/datapath"
	"github.com/tare-dev/tare/internal/htmlreport"
	"github.com/tare-dev/tare/internal/stats"
)

// Table writes a net run as WriteTable writes its result: per mode and size a row per path with its
// medians and, against its baseline, the ratio with its interval and p-value; then the differences in
// words, and where the CPU went.
func Table(w io.Writer, r Report) error { return datapath.WriteTable(w, r.Result()) }

// Result is the net run as its table and its page show it: per mode and message size, each path's
// finished trials' figures; every ratio; every trial; what was not measured, the paths' MTU, the failed
// trials and transactions, the warnings, and where each lane's CPU went.
func (r Report) Result() datapath.Result {
	res := datapath.Result{DatapathHead: htmlreport.DatapathHead{Verb: "net", Lane: "path", Node: r.Node, RemoteNode: r.RemoteNode, Baseline: r.Baseline,
		Setup: fmt.Sprintf("%d round(s) of %s trials in shuffled order (--seed %d), %d stream(s)", r.Rounds, r.Duration, r.Seed, r.Parallel),
		Took:  r.Took, Cancelled: r.Cancelled, Alpha: datapath.Alpha, Sweep: "message size"},
		WorkUnit: "unit of work", Warnings: r.Warnings, PathMTU: pathMTUs(r), Failed: failures(r.Trials), FailedTransactions: failedTransactions(r.Trials)}
	for _, p := range slices.Sorted(maps.Keys(r.Skipped)) {
		res.Skipped = append(res.Skipped, p+": "+r.Skipped[p])
	}
	datapath.Rows[Trial, Lane]{
		Groups: datapath.RunsOf(r.Lanes, func(a, b Lane) bool { return a.Mode == b.Mode && a.Size == b.Size }),
		Head: func(g []Lane) datapath.Group {
			m, size := g[0].Mode, datapath.FormatSize(g[0].Size)
			rg := datapath.Group{Name: fmt.Sprintf("%s, %s messages", m, size), Subject: subjectOf(m, g[0].Size), Chart: string(m), Value: size,
				Versus: r.Baseline, Figures: datapath.HeadsOf(metricsOf(m))}
			if bs := r.groupBaselines(g); len(bs) > 1 {
				rg.Versus, rg.VersusNote = "baseline", "; the cross-node paths ÷ "+string(HostCrossNode)+", the others ÷ "+r.Baseline
			}
			return rg
		},
		Trials: r.Trials,
	}.Fill(&res)
	for _, x := range r.Ratios {
		c := datapath.Comparison{Lane: x.Path, Against: x.Against, Subject: subjectOf(x.Mode, x.Size), Metric: x.Metric, Baseline: x.Against == r.baselineOf(x.Path), Shift: x.Shift}
		switch {
		case x.Metric == "gbps" && x.Mode.Stream():
			c.Words = "throughput"
		case x.Metric == "p50_us" && !x.Mode.Stream():
			c.Words = "p50 latency"
		case x.Metric == "cpu_per_unit":
			c.PerWork = x.Mode.Unit()
		}
		res.Comparisons = append(res.Comparisons, c)
	}
	if len(r.Trials) > 0 {
		res.CPU = cpuRows(r)
	}
	return res
}

// subjectOf names the group of mode m and message size: "tcp-stream 16k".
func subjectOf(m Mode, size int) string { return fmt.Sprintf("%s %s", m, datapath.FormatSize(size)) }

// Row is what the run's Result says of the trial.
func (t Trial) Row() datapath.TrialFigures[Lane] {
	r := datapath.TrialFigures[Lane]{Seq: t.Seq, Round: t.Round, Lane: t.Lane, NodeBusy: t.NodeBusy, Err: t.Error, Warnings: t.Warnings}
	for _, x := range metricsOf(t.Lane.Mode) {
		r.Figures = append(r.Figures, x.Value(t))
	}
	return r
}

// cpuRows are, per lane with finished trials, the node's and each group's CPU per unit of work (medians
// over trials), the largest groups first.
func cpuRows(r Report) []datapath.CPURow {
	out := []datapath.CPURow{}
	for _, l := range r.Lanes {
		ts := datapath.Keep(r.Trials, func(t Trial) bool { return t.Error == "" && t.Lane == l })
		if len(ts) == 0 {
			continue
		}
		per := map[string][]float64{}
		for _, t := range ts {
			for g, mc := range t.Groups {
				per[g] = append(per[g], t.perUnit(mc))
			}
		}
		row := datapath.CPURow{Lane: l.Label(), Mode: string(l.Mode), Size: datapath.FormatSize(l.Size), Unit: l.Mode.Unit(),
			Node: stats.MedianOf(datapath.ValuesOf(ts, Metric{Value: func(t Trial) float64 { return t.CPUPerUnit }}))}
		for g, vs := range per {
			row.Groups = append(row.Groups, datapath.GroupCPU{Name: g, Value: stats.MedianOf(vs)})
		}
		slices.SortFunc(row.Groups, func(a, b datapath.GroupCPU) int {
			if a.Value != b.Value {
				return -cmp.Compare(a.Value, b.Value)
			}
			return strings.Compare(a.Name, b.Name)
		})
		out = append(out, row)
	}
	return out
}

func failures(ts []Trial) string {
	var out []string
	for _, t := range ts {
		if t.Error != "" {
			out = append(out, fmt.Sprintf("#%d %s %s %s: %s", t.Seq, t.Lane.Label(), t.Lane.Mode, datapath.FormatSize(t.Lane.Size), t.Error))
		}
	}
	return strings.Join(out, "; ")
}

// baselineOf is the baseline of the lane labelled label (Baselines; Baseline for a report without them).
func (r Report) baselineOf(label string) string {
	if b, ok := r.Baselines[label]; ok {
		return b
	}
	return r.Baseline
}

// groupBaselines are the distinct baselines of lanes g.
func (r Report) groupBaselines(g []Lane) map[string]bool {
	out := map[string]bool{}
	for _, l := range g {
		if l.Label() != r.Baseline {
			out[r.baselineOf(l.Label())] = true
		}
	}
	return out
}

// pathMTUs lists each path's MTU as its trials ran, once per path label ("" when no trial knows it).
func pathMTUs(r Report) string {
	mtu := map[string]int{}
	for _, t := range r.Trials {
		if t.PathMTU > 0 {
			mtu[t.Lane.Label()] = t.PathMTU
		}
	}
	var out []string
	seen := map[string]bool{}
	for _, l := range r.Lanes {
		if m, ok := mtu[l.Label()]; ok && !seen[l.Label()] {
			seen[l.Label()] = true
			out = append(out, fmt.Sprintf("%s %d", l.Label(), m))
		}
	}
	return strings.Join(out, ", ")
}

// failedTransactions lists the trials some of whose transactions failed (tcp-crr), with the first error.
func failedTransactions(ts []Trial) string {
	var out []string
	for _, t := range ts {
		if t.Error == "" && t.Failed > 0 {
			out = append(out, fmt.Sprintf("#%d %s %s %s: %d (%s)", t.Seq, t.Lane.Label(), t.Lane.Mode, datapath.FormatSize(t.Lane.Size), t.Failed, t.FailedWhy))
		}
	}
	return strings.Join(out, "; ")
}
