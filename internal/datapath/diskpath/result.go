package diskpath

import (
	"fmt"
	"io"
	"strings"

	"github.com/tare-dev/tare/internal/htmlreport"
)

// DiskTable writes a disk run as WriteTable writes its result: its targets (file system, device, direct
// or buffered I/O), then per pattern, block size and depth a row per target with its medians and,
// against the host, the ratio with its interval and p-value; then the differences in words.
func DiskTable(w io.Writer, r DiskReport) error { return WriteTable(w, r.Result()) }

// sameAsIOPS is the figure whose ratio the table leaves out: with one block size it is IOPS's (the JSON
// and the page have it).
const sameAsIOPS = "mb_per_s"

// Result is the disk run as its table and its page show it: its targets, then per pattern, block size
// and depth each target's finished trials' figures; every ratio; every trial; the failed trials.
func (r DiskReport) Result() Result {
	res := Result{DatapathHead: htmlreport.DatapathHead{Verb: "disk", Lane: "target", Node: r.Node, Baseline: r.Baseline,
		Setup: fmt.Sprintf("%d round(s) of %s fio trials in shuffled order (--seed %d), one %d MiB file per target", r.Rounds, r.Duration, r.Seed, r.Size>>20),
		Took:  r.Took, Cancelled: r.Cancelled, Alpha: Alpha},
		WorkUnit: "10,000 I/Os", Targets: append([]TargetInfo{}, r.Targets...), Failed: diskFailures(r.Trials)}
	figures := headsOf(diskMetrics)
	for i := range figures {
		figures[i].NoRatio = figures[i].Name == sameAsIOPS
	}
	resultRows[DiskTrial, DiskLane]{
		groups: runsOf(r.Lanes, func(a, b DiskLane) bool { return a.group() == b.group() }),
		head: func(g []DiskLane) Group {
			name := groupName(g[0].RW, g[0].BS, g[0].IODepth)
			return Group{Name: name, Subject: name, Value: name, Versus: r.Baseline, Figures: figures}
		},
		trials: r.Trials,
	}.fill(&res)
	for _, x := range r.Ratios {
		c := Comparison{Lane: x.Target, Against: x.Against, Subject: groupName(x.RW, x.BS, x.IODepth), Metric: x.Metric, Baseline: true, Shift: x.Shift}
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

func (t DiskTrial) row() trialRow[DiskLane] {
	r := trialRow[DiskLane]{seq: t.Seq, round: t.Round, lane: t.Lane, nodeBusy: t.NodeBusy, err: t.Error, warnings: t.Warnings}
	for _, m := range diskMetrics {
		r.figures = append(r.figures, m.value(t))
	}
	return r
}

func groupName(rw RW, bs, depth int) string {
	return fmt.Sprintf("%s %s qd%d", rw, FormatSize(bs), depth)
}

func diskFailures(ts []DiskTrial) string {
	var out []string
	for _, t := range ts {
		if t.Error != "" {
			out = append(out, fmt.Sprintf("#%d %s %s: %s", t.Seq, t.Lane.Label(), groupName(t.Lane.RW, t.Lane.BS, t.Lane.IODepth), t.Error))
		}
	}
	return strings.Join(out, "; ")
}
