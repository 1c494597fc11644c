package htmlreport

import (
	"fmt"
	"strings"
	"time"

	"github.com/tare-dev/tare/internal/output"
	"github.com/tare-dev/tare/internal/stats"
)

// Datapath is the page of a tare datapath run, net or disk: headline cards; per chart and figure each
// lane's ratio to the baseline with its interval; each chart's main figure against the swept value (net:
// the message size); the text table's figures; every trial; the notes. what says what ran and with what
// ("tare datapath net with this machine").
func Datapath(r DatapathRun, what, version string) Page {
	finished := 0
	for _, t := range r.Trials {
		if t.Error == "" {
			finished++
		}
	}
	p := Page{Title: fmt.Sprintf("tare datapath %s: each %s against %s on %s", r.Verb, r.Lane, r.Baseline, orDash(r.Node)),
		Subtitle: fmt.Sprintf("%s · %s · took %s", what, r.Setup, orDash(r.Took)), Version: version, Made: time.Now()}
	switch {
	case finished == 0 && len(r.Trials) == 0:
		p.Thin = "No trial finished: the run stopped before its first trial ended. There is nothing to compare."
	case finished == 0:
		p.Thin = fmt.Sprintf("No trial finished: all %d failed (the trials table says why). There is nothing to compare.", len(r.Trials))
	case r.Cancelled:
		p.Thin = fmt.Sprintf("The run was cut short after %d trial(s); what was measured is shown.", len(r.Trials))
	}
	p.Cards = datapathCards(r, finished)
	if s, ok := datapathRatiosSection(r); ok {
		p.Sections = append(p.Sections, s)
	}
	if s, ok := datapathLinesSection(r); ok {
		p.Sections = append(p.Sections, s)
	}
	p.Sections = append(p.Sections, datapathFiguresSection(r), datapathTrialsSection(r))
	if len(r.Notes) > 0 {
		p.Sections = append(p.Sections, Section{ID: "notes", Title: "Notes", Items: r.Notes})
	}
	return p
}

func datapathCards(r DatapathRun, finished int) []Card {
	node := Card{Label: "node", Value: orDash(r.Node)}
	if r.RemoteNode != "" {
		node.Detail = "second node " + r.RemoteNode
	}
	took := Card{Label: "took", Value: orDash(r.Took)}
	if r.Cancelled {
		took.Detail = "cut short by Ctrl-C"
	}
	compared, significant := 0, 0
	for _, g := range r.Groups {
		for _, l := range g.Lanes {
			for _, q := range l.Ratios {
				compared++
				if q.Significant {
					significant++
				}
			}
		}
	}
	return []Card{node,
		{Label: "trials", Value: fmt.Sprint(finished), Detail: fmt.Sprintf("finished of %d run", len(r.Trials))},
		took,
		{Label: "baseline", Value: orDash(r.Baseline), Detail: fmt.Sprintf("every %s is compared with it", r.Lane)},
		{Label: "differences", Value: fmt.Sprintf("%d of %d", significant, compared), Detail: fmt.Sprintf("comparisons significant at α = %.2g, each alone", r.Alpha)},
	}
}

func datapathRatiosSection(r DatapathRun) (Section, bool) {
	s := Section{ID: "ratios", Title: "Ratios to " + r.Baseline,
		Intro: fmt.Sprintf("Each %s's figure divided by %s's: a bar from 1 to the Hodges–Lehmann ratio (the median of all pairwise ratios of their trials), whiskers over its interval, a dashed line at 1 (no difference). Red where the Mann–Whitney p is below %.2g, each comparison alone: a run makes many, so about one in twenty differs by chance. Hover a bar for the ratio, interval, p and trial counts.",
			r.Lane, r.Baseline, r.Alpha)}
	for i, c := range ratioCharts(r) {
		c.ID = fmt.Sprintf("chart-ratios-%d", i)
		s.Charts = append(s.Charts, c)
	}
	return s, len(s.Charts) > 0
}

func datapathLinesSection(r DatapathRun) (Section, bool) {
	s := Section{ID: "sweep", Title: "Against " + r.Sweep,
		Intro: fmt.Sprintf("Each %s's main figure at each %s: the median of its finished trials, bars from the lowest trial to the highest.", r.Lane, r.Sweep)}
	for i, c := range lineCharts(r) {
		c.ID = fmt.Sprintf("chart-lines-%d", i)
		s.Charts = append(s.Charts, c)
	}
	return s, len(s.Charts) > 0
}

// datapathFiguresSection holds the text table's figures: per group each lane's trials, medians and
// ratios against the baseline; for disk, first the targets.
func datapathFiguresSection(r DatapathRun) Section {
	s := Section{ID: "figures", Title: "Figures",
		Intro: fmt.Sprintf("The medians of each %s's finished trials; vs %s: the ratio with its interval; p: Mann–Whitney, * below %.2g.", r.Lane, r.Baseline, r.Alpha)}
	if len(r.Targets) > 0 {
		t := Table{Caption: "Targets", Head: []string{"target", "file", "fs", "device", "I/O"}}
		for _, x := range r.Targets {
			dev := x.Device
			if x.FSType == "overlay" {
				dev = "overlay " + dev + ", upper layer"
			}
			same := "same as " + r.Baseline
			if !x.SameDevice {
				same = "NOT " + r.Baseline + "'s"
			}
			t.Rows = append(t.Rows, []string{x.Target, x.File, x.FSType, dev + " " + same, x.IO})
		}
		s.Tables = append(s.Tables, t)
	}
	for _, g := range r.Groups {
		t := Table{Head: []string{r.Lane, "n"}, Right: []bool{false, true}}
		for _, f := range g.Figures {
			t.Head = append(t.Head, f.Title, "vs "+r.Baseline, "p")
			t.Right = append(t.Right, true, true, true)
		}
		var first *DatapathRatio
		for _, l := range g.Lanes {
			row := []string{l.Label, fmt.Sprint(finishedOf(l))}
			for i, f := range g.Figures {
				row = append(row, output.Figure(stats.MedianOf(l.Values[i])))
				q, ok := ratioOf(l, f.Name, r.Baseline)
				if !ok {
					row = append(row, "—", "")
					continue
				}
				if first == nil {
					first = &q
				}
				p := fmt.Sprintf("%.3g", q.P)
				if q.Significant {
					p += " *"
				}
				row = append(row, fmt.Sprintf("%.3f [%.3f, %.3f]", q.Ratio, q.Lo, q.Hi), p)
			}
			t.Rows = append(t.Rows, row)
		}
		t.Caption = g.Name
		if first != nil {
			t.Caption += fmt.Sprintf(" (intervals at %.1f%%)", 100*first.Level)
			if first.MinP >= r.Alpha {
				t.Caption += fmt.Sprintf(": with these few trials no p can fall below %.3f, so nothing can be significant (use --trials 4 or more)", first.MinP)
			}
		}
		s.Tables = append(s.Tables, t)
	}
	return s
}

func datapathTrialsSection(r DatapathRun) Section {
	t := Table{Caption: "In the order they ran", Head: []string{"#", "round", r.Lane, "load", "figures", "node busy", "error or warnings"},
		Right: []bool{true, true, false, false, false, true}}
	for _, x := range r.Trials {
		load, busy := "", "–"
		var figures []string
		if x.Group >= 0 && x.Group < len(r.Groups) {
			g := r.Groups[x.Group]
			load = g.Name
			for i, v := range x.Values {
				if i < len(g.Figures) {
					figures = append(figures, g.Figures[i].Title+" "+output.Figure(v))
				}
			}
		}
		note := x.Error
		if x.Error == "" {
			busy = output.Millicores(x.NodeBusy)
			note = strings.Join(x.Warnings, "; ")
		}
		t.Rows = append(t.Rows, []string{fmt.Sprint(x.Seq), fmt.Sprint(x.Round), x.Lane, load, strings.Join(figures, ", "), busy, note})
	}
	return Section{ID: "trials", Title: "Trials", Intro: "Every trial, failed ones included (they are left out of the figures above).", Tables: []Table{t}}
}

// finishedOf is the number of the lane's finished trials.
func finishedOf(l DatapathLane) int {
	if len(l.Values) == 0 {
		return 0
	}
	return len(l.Values[0])
}

// ratioOf is the lane's ratio of a figure against another lane.
func ratioOf(l DatapathLane, figure, against string) (DatapathRatio, bool) {
	for _, q := range l.Ratios {
		if q.Figure == figure && q.Against == against {
			return q, true
		}
	}
	return DatapathRatio{}, false
}
