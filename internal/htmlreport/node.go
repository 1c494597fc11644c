package htmlreport

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/tare-dev/tare/internal/explain"
	"github.com/tare-dev/tare/internal/output"
	"github.com/tare-dev/tare/internal/summary"
)

// stackedGroups: the busiest groups are stacked in the chart one by one, the rest summed as one band.
const stackedGroups = 8

// Node is the page of one measurement (tare measure, report or explain): what it says, where it was
// taken, and from what (a recording's path, or "live").
func Node(rep explain.Report, what, version string) Page {
	sum := summary.Summary{}
	if rep.Summary != nil {
		sum = *rep.Summary
	}
	host := sum.Meta.Host
	if host == "" {
		host = "unknown host"
	}
	p := Page{
		Title:   "tare: what " + host + " costs",
		Version: version, Made: time.Now(),
		Subtitle: fmt.Sprintf("%s · %s · %d CPUs · kernel %s · %s to %s (%.1f s, %d intervals of %s)", what, host, sum.Meta.CPUs,
			orDash(sum.Meta.Kernel), stamp(sum.Window.Start), stamp(sum.Window.End), sum.Window.Seconds, sum.Window.Intervals, sum.Meta.Interval),
		Thin: thin(sum),
	}
	p.Cards = nodeCards(rep, sum)
	if sum.Window.Intervals >= 1 {
		p.Sections = append(p.Sections, busySection(rep, sum))
	}
	if len(rep.Findings) > 0 {
		intro := "Ranked by estimated CPU. Each says what was seen, what to change, how sure tare is and how to verify the change."
		if c := rep.ClusterRead; c != nil && c.Note != "" {
			intro += " Note: " + c.Note + "."
		}
		p.Sections = append(p.Sections, Section{ID: "findings", Title: "Findings", Intro: intro, Findings: rep.Findings})
	}
	if len(sum.Groups) > 0 {
		p.Sections = append(p.Sections, componentsSection(sum))
	}
	if s, ok := childrenSection(rep, sum); ok {
		p.Sections = append(p.Sections, s)
	}
	if s, ok := apiSection(rep.API); ok {
		p.Sections = append(p.Sections, s)
	}
	p.Sections = append(p.Sections, profileSections(rep)...)
	if s, ok := blockIOSection(sum.BlockIO); ok {
		p.Sections = append(p.Sections, s)
	}
	if len(rep.USE.Rows) > 0 {
		p.Sections = append(p.Sections, useSection(rep.USE))
	}
	p.Sections = append(p.Sections, notesSection(rep, sum))
	return p
}

// thin says why a measurement has little to show; "" when it has enough.
func thin(sum summary.Summary) string {
	n := sum.Window.Intervals
	switch {
	case n == 0 && sum.Window.Start.IsZero():
		return "The recording holds no samples: the measurement stopped before its first sample was taken. There is nothing to chart; measure again (tare measure --record FILE) and let it run at least a few seconds."
	case n == 0:
		return "The recording holds a single sample. CPU is the difference between two samples, so not one interval could be measured; measure again and let it run at least a few seconds."
	case n < 10:
		return fmt.Sprintf("The recording holds only %d interval(s) (%.1f s). The figures are real but rest on few points: percentiles, spikes and periods need at least 10 intervals, 60 or more for a steady picture.", n, sum.Window.Seconds)
	}
	if sum.Meta.Interrupted {
		return fmt.Sprintf("The measurement was interrupted after %.1f s of the %s asked for; what was measured is shown.", sum.Window.Seconds, sum.Meta.Duration)
	}
	return ""
}

func nodeCards(rep explain.Report, sum summary.Summary) []Card {
	if sum.Window.Intervals == 0 {
		return nil
	}
	r := sum.Reconcile
	cards := []Card{
		{Label: "node busy", Value: output.Millicores(r.NodeBusy), Detail: fmt.Sprintf("%.1f%% of %d CPUs (%s)", sum.Node.BusyPercent, sum.Node.CPUs, r.Reference)},
		{Label: "groups", Value: output.Millicores(r.Groups), Detail: fmt.Sprintf("%d groups", len(sum.Groups))},
		{Label: "unattributed", Value: output.Millicores(r.Unattributed), Detail: fmt.Sprintf("resolution ±%s", output.Millicores(r.Resolution))},
		{Label: "tare itself", Value: output.Millicores(r.Self), Detail: "apart from every group"},
	}
	for _, w := range r.Warnings {
		cards = append(cards, Card{Label: warningLabel, Value: w.Code, Detail: fmt.Sprintf("%s: %s; likely cause: %s", w.Figure, w.Message, w.Cause)})
	}
	if len(rep.Findings) > 0 {
		cards = append(cards, Card{Label: "findings", Value: fmt.Sprint(len(rep.Findings)), Detail: "top: " + rep.Findings[0].Title})
	}
	return cards
}

// warningLabel marks the cards of warnings about the headline figures (the reconciliation's), drawn to
// stand out.
const warningLabel = "warning"

// Warning says whether the card is a warning about a figure rather than a figure.
func (c Card) Warning() bool { return c.Label == warningLabel }

// busySeries is the chart input of kind busy.
type busySeries struct {
	Times     []int64     `json:"times"` // ms since the epoch, each interval's end
	Node      []float64   `json:"node"`
	Groups    []namedLine `json:"groups"`
	Spikes    []spikeArea `json:"spikes"`
	Threshold float64     `json:"threshold"`
}

type namedLine struct {
	Name   string    `json:"name"`
	Series []float64 `json:"series"`
}

type spikeArea struct {
	From  int64  `json:"from"`
	To    int64  `json:"to"`
	Label string `json:"label"`
}

func busySection(rep explain.Report, sum summary.Summary) Section {
	a := rep.Activity
	d := busySeries{Node: a.Series, Threshold: a.ThresholdMc, Groups: []namedLine{}, Spikes: []spikeArea{}}
	for _, t := range a.Times {
		d.Times = append(d.Times, t.UnixMilli())
	}
	gs := sum.GroupSeries()
	names := make([]string, 0, len(gs))
	for name := range gs {
		names = append(names, name)
	}
	mean := func(xs []float64) float64 {
		var s float64
		for _, x := range xs {
			s += x
		}
		return s / float64(max(len(xs), 1))
	}
	sort.Slice(names, func(i, j int) bool {
		mi, mj := mean(gs[names[i]]), mean(gs[names[j]])
		if mi != mj {
			return mi > mj
		}
		return names[i] < names[j]
	})
	var rest []float64
	for i, name := range names {
		if i < stackedGroups {
			d.Groups = append(d.Groups, namedLine{Name: name, Series: gs[name]})
			continue
		}
		if rest == nil {
			rest = make([]float64, len(gs[name]))
		}
		for j, x := range gs[name] {
			rest[j] += x
		}
	}
	if rest != nil {
		d.Groups = append(d.Groups, namedLine{Name: fmt.Sprintf("%d other groups", len(names)-stackedGroups), Series: rest})
	}
	for _, s := range a.Spikes {
		label := fmt.Sprintf("peak %s", output.Millicores(s.PeakMc))
		if len(s.Groups) > 0 {
			label += ": " + s.Groups[0].Group
		}
		d.Spikes = append(d.Spikes, spikeArea{From: s.At.UnixMilli(), To: s.At.Add(time.Duration(s.Seconds * float64(time.Second))).UnixMilli(), Label: label})
	}
	intro := fmt.Sprintf("Node busy (%s) per %.3g s interval, the black line; the groups' CPU stacked under it (the busiest %d one by one). "+
		"The gap between the stack and the line is tare itself and CPU no process was credited with. Shaded: spikes above the baseline (median %s + 4 MAD, at least %s above it).",
		orDash(a.Source), a.IntervalSeconds, stackedGroups, output.Millicores(a.Baseline.Median), output.Millicores(20))
	s := Section{ID: "busy", Title: "Node busy over time", Intro: intro,
		Charts: []Chart{{ID: "chart-busy", Kind: "busy", Height: 420, Data: d}}}
	if len(a.Spikes) > 0 {
		t := Table{Caption: "Spikes", Head: []string{"at", "seconds", "peak", "CPU above baseline", "groups above their median", "commands started in it"},
			Right: []bool{false, true, true, true}}
		for _, sp := range a.Spikes {
			var who []string
			for _, c := range sp.Groups {
				who = append(who, fmt.Sprintf("%s %.0f ms", c.Group, c.ExcessMs))
			}
			var started []string
			for i, c := range sp.Started {
				if i == 5 {
					started = append(started, fmt.Sprintf("and %d more", len(sp.Started)-5))
					break
				}
				started = append(started, summary.Clip(c, 120))
			}
			t.Rows = append(t.Rows, []string{sp.At.Format("15:04:05.000"), fmt.Sprintf("%.2f", sp.Seconds), output.Millicores(sp.PeakMc),
				fmt.Sprintf("%.0f ms", sp.ExcessMs), strings.Join(who, ", "), strings.Join(started, "; ")})
		}
		s.Tables = append(s.Tables, t)
	}
	return s
}

func componentsSection(sum summary.Summary) Section {
	g := Table{Caption: "Groups: Kubernetes components, pods, kernel threads, other processes",
		Head:  []string{"group", "kind", "procs", "CPU mean", "p95", "max", "children", "share of busy", "RSS", "PSS", "private", "threads", "read/s", "write/s"},
		Right: []bool{false, false, true, true, true, true, true, true, true, true, true, true, true, true}}
	for _, x := range sum.Groups {
		g.Rows = append(g.Rows, []string{x.Name, x.Kind, fmt.Sprint(x.Processes), output.Millicores(x.CPU.Mean), output.Millicores(x.CPU.P95), output.Millicores(x.CPU.Max),
			output.Millicores(x.ChildrenCPU), fmt.Sprintf("%.1f%%", x.SharePct), output.Bytes(x.RSS), output.Bytes(x.PSS), output.Bytes(x.Private),
			fmt.Sprint(x.Threads), output.Bytes(x.ReadBps), output.Bytes(x.WriteBps)})
	}
	p := Table{Caption: "Processes, busiest first", Head: []string{"pid", "group", "command", "CPU mean", "p95", "max", "RSS", "private", "life"},
		Right: []bool{true, false, false, true, true, true, true, true}}
	for i, x := range sum.Processes {
		if i == 25 {
			break
		}
		life := ""
		switch {
		case x.Started && x.Exited:
			life = "started and exited in the window"
		case x.Started:
			life = "started in the window"
		case x.Exited:
			life = "exited in the window"
		}
		p.Rows = append(p.Rows, []string{fmt.Sprint(x.PID), x.Group, summary.Clip(x.Cmdline, 200), output.Millicores(x.CPU.Mean), output.Millicores(x.CPU.P95),
			output.Millicores(x.CPU.Max), output.Bytes(x.RSS), output.Bytes(x.Private), life})
	}
	r := sum.Reconcile
	intro := fmt.Sprintf("CPU in millicores (1000m = one core busy). Reconciliation: groups %s + tare %s + unattributed %s = node busy %s (%s; resolution ±%s). %s.",
		output.Millicores(r.Groups), output.Millicores(r.Self), output.Millicores(r.Unattributed), output.Millicores(r.NodeBusy), r.Reference, output.Millicores(r.Resolution), r.Explanation)
	for _, w := range r.Warnings {
		intro += fmt.Sprintf(" Warning (%s): %s; likely cause: %s.", w.Code, w.Message, w.Cause)
	}
	return Section{ID: "components", Title: "Per component", Intro: intro, Tables: []Table{g, p}}
}

func childrenSection(rep explain.Report, sum summary.Summary) (Section, bool) {
	if len(sum.Children) == 0 && len(rep.Activity.Pollers) == 0 {
		return Section{}, false
	}
	s := Section{ID: "short-lived", Title: "Short-lived processes and pollers",
		Intro: "Processes that started and ended within the window, credited with their command line to the long-lived process that spawned them. A poller starts the same command at a steady interval."}
	if len(rep.Activity.Pollers) > 0 {
		t := Table{Caption: "Pollers", Head: []string{"parent", "command", "runs", "every", "irregularity", "CPU per run", "CPU", "share of busy"},
			Right: []bool{false, false, true, true, true, true, true, true}}
		for _, x := range rep.Activity.Pollers {
			t.Rows = append(t.Rows, []string{fmt.Sprintf("%d %s", x.ParentPID, summary.Clip(x.ParentCmdline, 80)), summary.Clip(x.Cmdline, 160),
				fmt.Sprint(x.Runs), fmt.Sprintf("%.2f s", x.PeriodSeconds), fmt.Sprintf("%.0f%%", 100*x.Irregularity),
				fmt.Sprintf("%.1f ms", x.CPUPerRunMs), output.Millicores(x.CPUMc), fmt.Sprintf("%.1f%%", x.SharePct)})
		}
		s.Tables = append(s.Tables, t)
	}
	if len(sum.Children) > 0 {
		t := Table{Caption: "Short-lived children by parent and command", Head: []string{"parent", "group", "command", "runs", "per minute", "median gap", "CPU per run", "CPU", "share of busy"},
			Right: []bool{false, false, false, true, true, true, true, true, true}}
		for i, x := range sum.Children {
			if i == 25 {
				break
			}
			gap := "–"
			if x.PeriodSeconds > 0 {
				gap = fmt.Sprintf("%.2f s", x.PeriodSeconds)
			}
			t.Rows = append(t.Rows, []string{fmt.Sprintf("%d %s", x.ParentPID, summary.Clip(x.ParentCmdline, 80)), x.Group, summary.Clip(x.Cmdline, 160),
				fmt.Sprint(x.Runs), fmt.Sprintf("%.1f", x.PerMinute), gap, fmt.Sprintf("%.1f ms", x.CPUPerRunMs), output.Millicores(x.CPU), fmt.Sprintf("%.1f%%", x.SharePct)})
		}
		s.Tables = append(s.Tables, t)
	}
	return s, true
}

func useSection(u explain.USE) Section {
	t := Table{Caption: "Utilisation, saturation, errors", Head: []string{"resource", "utilisation", "saturation", "errors", "verdict"}}
	for _, r := range u.Rows {
		t.Rows = append(t.Rows, []string{r.Resource, r.Utilisation, r.Saturation, r.Errors, r.Verdict})
	}
	s := Section{ID: "use", Title: "USE view", Intro: u.Note, Tables: []Table{t}}
	if len(u.Writers) > 0 {
		w := Table{Caption: "Disk traffic by group", Head: []string{"group", "writes/s", "reads/s"}, Right: []bool{false, true, true}}
		for _, x := range u.Writers {
			w.Rows = append(w.Rows, []string{x.Group, output.Bytes(x.WriteBps), output.Bytes(x.ReadBps)})
		}
		s.Tables = append(s.Tables, w)
	}
	return s
}

func notesSection(rep explain.Report, sum summary.Summary) Section {
	s := Section{ID: "notes", Title: "How this was measured"}
	m := sum.Meta
	s.Items = append(s.Items,
		summary.BusyDefinition+".",
		fmt.Sprintf("Per-process CPU from %s; short-lived processes from %s; one sample every %s, memory and disk every %s.", orDash(m.CPUSource), orDash(m.ExitSource), m.Interval, m.Detail),
		summary.EffortNote+".")
	s.Items = append(s.Items, fmt.Sprintf("Node busy from %s.", orDash(sum.Reconcile.Reference)))
	for _, l := range m.Limitations {
		s.Items = append(s.Items, "Limitation: "+l)
	}
	if c := rep.ClusterRead; c != nil && c.Note != "" {
		s.Items = append(s.Items, "Note: "+c.Note+".")
	}
	for _, n := range rep.Notes {
		s.Items = append(s.Items, "Note: "+n)
	}
	for _, w := range rep.Warnings {
		s.Items = append(s.Items, fmt.Sprintf("Warning (%s): %s", w.Code, w.Message))
	}
	return s
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "–"
	}
	return t.Format("2006-01-02 15:04:05")
}

func orDash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}
