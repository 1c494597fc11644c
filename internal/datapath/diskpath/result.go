package diskpath

import (
	"fmt"
	"io"
	"strings"

	"github.com/tare-dev/tare/internal/datapath"
	"github.com/tare-dev/tare/internal/htmlreport"
)

// Table writes a disk run as WriteTable writes its result: its targets (file system, device, direct
// or buffered I/O), then per pattern, block size and depth a row per target with its medians and,
// against the host, the ratio with its interval and p-value; then the differences in words.
func Table(w io.Writer, r Report) error { return datapath.WriteTable(w, r.Result()) }

// sameAsIOPS is the figure whose ratio the table leaves out: with one block size it is IOPS's (the JSON
// and the page have it).
const sameAsIOPS = "mb_per_s"

// Result is the disk run as its table and its page show it: its targets, then per pattern, block size
// and depth each target's finished trials' figures; every ratio; every trial; the failed trials.
func (r Report) Result() datapath.Result {
	res := datapath.Result{DatapathHead: htmlreport.DatapathHead{Verb: "disk", Lane: "target", Node: r.Node, Baseline: r.Baseline,
		Setup: fmt.Sprintf("%d round(s) of %s fio trials in shuffled order (--seed %d), one %d MiB file per target", r.Rounds, r.Duration, r.Seed, r.Size>>20),
		Took:  r.Took, Cancelled: r.Cancelled, Alpha: datapath.Alpha},
		WorkUnit: "10,000 I/Os", Targets: targetRows(r.Targets), Failed: failures(r.Trials)}
	figures := datapath.HeadsOf(metrics)
	for i := range figures {
		figures[i].NoRatio = figures[i].Name == sameAsIOPS
	}
	datapath.Rows[Trial, Lane]{
		Groups: datapath.RunsOf(r.Lanes, func(a, b Lane) bool { return a.group() == b.group() }),
		Head: func(g []Lane) datapath.Group {
			name := groupName(g[0].RW, g[0].BS, g[0].IODepth)
			return datapath.Group{Name: name, Subject: name, Value: name, Versus: r.Baseline, Figures: figures}
		},
		Trials: r.Trials,
	}.Fill(&res)
	for _, x := range r.Ratios {
		c := datapath.Comparison{Lane: x.Target, Against: x.Against, Subject: groupName(x.RW, x.BS, x.IODepth), Metric: x.Metric, Baseline: true, Shift: x.Shift}
		switch x.Metric {
		case "iops":
			c.Words = "IOPS"
		case "cpu_per_10k_io":
			c.PerWork = "10k I/Os"
		}
		res.Comparisons = append(res.Comparisons, c)
	}
	return res
}

// Row is what the run's Result says of the trial.
func (t Trial) Row() datapath.TrialFigures[Lane] {
	r := datapath.TrialFigures[Lane]{Seq: t.Seq, Round: t.Round, Lane: t.Lane, NodeBusy: t.NodeBusy, Err: t.Error, Warnings: t.Warnings}
	for _, m := range metrics {
		r.Figures = append(r.Figures, m.Value(t))
	}
	return r
}

func groupName(rw RW, bs, depth int) string {
	return fmt.Sprintf("%s %s qd%d", rw, datapath.FormatSize(bs), depth)
}

func failures(ts []Trial) string {
	var out []string
	for _, t := range ts {
		if t.Error != "" {
			out = append(out, fmt.Sprintf("#%d %s %s: %s", t.Seq, t.Lane.Label(), groupName(t.Lane.RW, t.Lane.BS, t.Lane.IODepth), t.Error))
		}
	}
	return strings.Join(out, "; ")
}

// targetRows are the targets as the table and the page list them.
func targetRows(infos []TargetInfo) []htmlreport.DatapathTarget {
	rows := make([]htmlreport.DatapathTarget, 0, len(infos))
	for _, t := range infos {
		rows = append(rows, htmlreport.DatapathTarget{Target: t.Target, File: t.File, FSType: t.FSType, Device: t.Device, SameDevice: t.SameDevice, IO: t.IO()})
	}
	return rows
}
