package datapath

import (
	"github.com/tare-dev/tare/internal/htmlreport"
	"github.com/tare-dev/tare/internal/session"
	"github.com/tare-dev/tare/internal/warning"
)

// Result is a datapath run, net or disk, as its table (WriteTable) and its page (Result.View) show it:
// plain figures, made from a Report (Report.Result) or a DiskReport (DiskReport.Result), with no I/O. The
// two renderers read nothing else. A section one verb has and the other has not is nil for the other.
type Result struct {
	// DatapathHead is what the run is: its verb, what it compares, the node, the baseline, how the trials
	// ran, how long it took, whether Ctrl-C cut it short, what a chart's groups sweep.
	htmlreport.DatapathHead
	PathMTU string                      // net: each path's MTU as its trials ran ("host 65536, vxlan 1450"); "" when unknown
	Skipped []string                    // net: the paths not measured, each "path: why"
	Targets []htmlreport.DatapathTarget // disk: where each target's file lives (non-nil: the table lists them)
	// Failed lists the failed trials, left out of the figures; FailedTransactions (net) the trials some
	// of whose transactions failed, left out of the trials' figures. "" when none.
	Failed, FailedTransactions string
	Groups                     []Group      // the lanes compared with each other, in the order measured
	Comparisons                []Comparison // every ratio, in the order the run compared them
	Trials                     []TrialRow   // every trial, failed ones included, in the order run
	// WorkUnit is what the words' CPU figures are per: "unit of work" (net), "10,000 I/Os" (disk).
	WorkUnit string
	Warnings []warning.Warning // on the run's figures (net)
	// CPU is, per lane with finished trials, where its CPU went (net; nil for disk, and for a net run
	// without trials).
	CPU []CPURow
}

// Group is the lanes compared with each other: one mode and message size (net), or one pattern, block
// size and queue depth (disk).
type Group struct {
	Name    string // as the table heads it: "tcp-stream, 16k messages", "randread 4k qd1"
	Subject string // as the words name it, and the comparisons' key of the group: "tcp-stream 16k"
	// Chart is the charts the group's rows go into (net: its mode; disk: "", one chart per figure);
	// Value tells the group apart within its Chart: "16k", "randread 4k qd1".
	Chart, Value string
	// Versus names what the ratios compare with (the baseline, or "baseline" when the lanes have
	// different ones), VersusNote which lanes are set against which when they do ("" else).
	Versus, VersusNote string
	Figures            []FigureHead
	Lanes              []LaneRow
}

// FigureHead is one figure of a group's lanes.
type FigureHead struct {
	Name, Title, Unit string
	NoRatio           bool // the table shows the figure without its ratio (the JSON and the page have it)
}

// LaneRow is one lane of a group: its finished trials' figures.
type LaneRow struct {
	Label  string      // host, host#2, vxlan@mtu1500
	N      int         // finished trials
	Values [][]float64 // per figure of the group, the finished trials' values in the order run
}

// Comparison is one figure of one lane against another lane of its group (a Ratio, a DiskRatio).
type Comparison struct {
	Lane, Against string
	Subject       string // its group's
	Metric        string // the figure's Name
	Baseline      bool   // Against is the lane's baseline (else another lane: vxlan against pod-cross-node)
	// Words is how the words name the figure when it is its group's main one ("throughput", "IOPS"; ""
	// else); PerWork what the figure is per when it is the node's CPU per unit of work ("" else).
	Words, PerWork string
	Shift
}

// TrialRow is one trial as the page lists it.
type TrialRow struct {
	Seq, Round int
	Lane       string    // its lane's label
	Group      int       // its group's index in Result.Groups; -1 when its lane is in none
	Values     []float64 // per figure of its group; nil when the trial failed
	NodeBusy   float64   // millicores over the trial's window
	Error      string    // why the trial failed
	Warnings   []string  // the trial window's
}

// CPURow is where one lane's CPU went: the node's CPU per unit of work and each group's (component,
// pod, other, …), medians over the lane's finished trials, the largest first.
type CPURow struct {
	Lane, Mode, Size string
	Unit             string // what the figures are per: Gbit, 10k transactions
	Node             float64
	Groups           []GroupCPU
}

// GroupCPU is one group's CPU per unit of work.
type GroupCPU struct {
	Name  string
	Value float64
}

// Rows is what a run's result lists, whichever tool ran it (T its trial, L its lane): the groups
// of lanes and every trial.
type Rows[T RowTrial[L], L RowLane] struct {
	Groups [][]L
	Head   func(g []L) Group // the group without its lanes
	Trials []T
}

// RowTrial is a trial a result lists (Trial, DiskTrial).
type RowTrial[L comparable] interface{ Row() TrialFigures[L] }

// RowLane is a lane a result lists (Lane, DiskLane).
type RowLane interface {
	comparable
	Label() string
}

// TrialFigures is what the result says of one trial.
type TrialFigures[L comparable] struct {
	Seq, Round int
	Lane       L
	NodeBusy   float64 // millicores
	Err        string
	Warnings   []session.Warning
	Figures    []float64 // in the order of its group's figures (shown only when the trial finished)
}

// Fill adds to r each group (as head makes it) with a row per lane: each figure's values over the
// lane's finished trials, in the order run; then every trial in the order run, with its group's index
// (-1 when its lane is in no group), a finished trial's figures and its warnings.
func (p Rows[T, L]) Fill(r *Result) {
	rows := make([]TrialFigures[L], len(p.Trials))
	for i, t := range p.Trials {
		rows[i] = t.Row()
	}
	group := map[L]int{}
	for _, g := range p.Groups {
		rg := p.Head(g)
		for _, l := range g {
			group[l] = len(r.Groups)
			rl := LaneRow{Label: l.Label(), Values: make([][]float64, len(rg.Figures))}
			for _, t := range rows {
				if t.Err == "" && t.Lane == l {
					rl.N++
					for i, x := range t.Figures {
						rl.Values[i] = append(rl.Values[i], x)
					}
				}
			}
			rg.Lanes = append(rg.Lanes, rl)
		}
		r.Groups = append(r.Groups, rg)
	}
	for _, t := range rows {
		rt := TrialRow{Seq: t.Seq, Round: t.Round, Lane: t.Lane.Label(), Group: -1, NodeBusy: t.NodeBusy, Error: t.Err}
		if i, ok := group[t.Lane]; ok {
			rt.Group = i
		}
		if t.Err == "" {
			rt.Values = t.Figures
		}
		for _, w := range t.Warnings {
			rt.Warnings = append(rt.Warnings, w.String())
		}
		r.Trials = append(r.Trials, rt)
	}
}

// HeadsOf are the heads of figures fs, none without its ratio.
func HeadsOf[T any](fs []Figure[T]) []FigureHead {
	out := make([]FigureHead, len(fs))
	for i, f := range fs {
		out[i] = FigureHead{Name: f.Name, Title: f.Title, Unit: f.Unit}
	}
	return out
}
