package htmlreport

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/gonum/stat"

	"github.com/tare-dev/tare/internal/compare"
	"github.com/tare-dev/tare/internal/warning"
)

// boxData is the chart input of kind box.
type boxData struct {
	Unit     string       `json:"unit"`
	Variants []boxVariant `json:"variants"`
}

type boxVariant struct {
	Name   string     `json:"name"`
	Values []float64  `json:"values"`
	Box    [5]float64 `json:"box"` // min, first quartile, median, third quartile, max
}

// sweepData is the chart input of kind sweep.
type sweepData struct {
	Flag   string       `json:"flag"`
	Unit   string       `json:"unit"`
	Points []sweepPoint `json:"points"`
}

type sweepPoint struct {
	Value       string  `json:"value"`
	Median      float64 `json:"median"`
	Lo          float64 `json:"lo"`
	Hi          float64 `json:"hi"`
	Significant bool    `json:"significant"`
}

// Experiment is the page of an experiment's (or a diff's) results: verdicts, the benchstat table, each
// metric's distribution per variant, the sweep chart, and every trial.
func Experiment(r compare.Results, what, version string) Page {
	ok, failed := 0, 0
	for _, t := range r.Trials {
		switch t.Status {
		case "ok":
			ok++
		case "failed":
			failed++
		}
	}
	p := Page{Title: "tare experiment: " + r.Name, Version: version, Made: time.Now(),
		Subtitle: fmt.Sprintf("%s · %d trials (%d ok, %d failed) · α = %.2g · primary metric %s · guard tolerance %.0f%%", what, len(r.Trials), ok, failed, r.Alpha, r.Primary, r.Tolerance)}
	switch {
	case ok == 0:
		p.Thin = "No trial has finished yet: there is nothing to compare. Run the experiment (or tare experiment --resume DIR) to get results."
	case len(r.Rows) == 0:
		p.Thin = "The finished trials measured no metric."
	}
	for _, v := range r.Verdicts {
		if v.Baseline {
			p.Cards = append(p.Cards, Card{Label: "baseline", Value: v.Variant, Detail: fmt.Sprintf("%d trials", v.Trials)})
			continue
		}
		value := "not recommended"
		if v.Recommended {
			value = "recommended"
		}
		p.Cards = append(p.Cards, Card{Label: v.Variant, Value: value, Detail: v.Summary})
	}
	p.Sections = append(p.Sections, resultsSection(r))
	if s, ok := sequentialSection(r); ok {
		p.Sections = append(p.Sections, s)
	}
	if s, ok := sweepSection(r); ok {
		p.Sections = append(p.Sections, s)
	}
	if s, ok := distributionSection(r); ok {
		p.Sections = append(p.Sections, s)
	}
	p.Sections = append(p.Sections, trialsSection(r))
	return p
}

func resultsSection(r compare.Results) Section {
	s := Section{ID: "results", Title: "Results",
		Intro: fmt.Sprintf("Each variant's median with its %.0f%% interval (order statistics; n trials); the change from the baseline as a Hodges–Lehmann shift with its interval and a Mann–Whitney U test: ~ where it is not significant at α = %.2g (benchstat's convention).",
			100*(1-r.Alpha), r.Alpha)}
	if len(r.Rows) > 0 {
		t := Table{Head: []string{"metric"}, Right: []bool{false}}
		for i, c := range r.Rows[0].Cells {
			if i == 0 {
				t.Head = append(t.Head, c.Variant+" (baseline)")
				t.Right = append(t.Right, true)
				continue
			}
			t.Head = append(t.Head, c.Variant, "vs baseline", "smallest detectable")
			t.Right = append(t.Right, true, true, true)
		}
		for _, row := range r.Rows {
			cols := []string{row.Label()}
			for i, c := range row.Cells {
				cols = append(cols, compare.MedianText(c))
				if i > 0 {
					cols = append(cols, compare.ChangeText(c), compare.MDEText(c))
				}
			}
			t.Rows = append(t.Rows, cols)
		}
		s.Tables = append(s.Tables, t)
	}
	v := Table{Caption: "Verdicts", Head: []string{"variant", "trials", "failed", "guard", "recommended", "summary"}, Right: []bool{false, true, true}}
	for _, x := range r.Verdicts {
		guard := "ok"
		if !x.GuardOK {
			guard = "worse: " + strings.Join(warning.Messages(x.Guard), "; ")
		}
		rec := "no"
		switch {
		case x.Baseline:
			rec, guard = "baseline", "–"
		case x.Recommended:
			rec = "yes"
		}
		v.Rows = append(v.Rows, []string{x.Variant, fmt.Sprint(x.Trials), fmt.Sprint(x.Failed), guard, rec, x.Summary})
	}
	s.Tables = append(s.Tables, v)
	for _, w := range r.Warnings {
		s.Items = append(s.Items, "Warning: "+w.Message)
	}
	return s
}

// sequentialSection is a sequential experiment's plan and every look of each variant.
func sequentialSection(r compare.Results) (Section, bool) {
	p := r.Plan
	if p == nil {
		return Section{}, false
	}
	s := Section{ID: "sequential", Title: "Sequential test",
		Intro: fmt.Sprintf("%s. Plan: detect ±%.1f%% of %s (%.4g at baseline) with 80%% power in up to %d rounds, looking from round %d; the noise of one pair's difference was %.3g (%s). Each look compares the z of the mean difference with its bound and gives a repeated confidence interval, which holds the true change at every look at once with probability 1 − α.",
			p.Method(), p.MDEPct, r.Primary, p.Base, p.MaxRounds, p.FirstLook, p.Sigma, p.Pilot)}
	if t := p.BudgetText(); t != "" {
		s.Items = append(s.Items, strings.ToUpper(t[:1])+t[1:]+".")
	}
	for _, q := range r.Sequential {
		t := Table{Caption: fmt.Sprintf("%s: %s; sensitivity reached ±%.1f%%", q.Variant, compare.SequentialText(q, *p, r.Primary), float64(q.ReachedPct)),
			Head: []string{"round", "pairs", "information", "mean difference", "repeated interval", "z", "bound"}, Right: []bool{true, true, true, true, true, true, true}}
		for _, l := range q.Looks {
			t.Rows = append(t.Rows, []string{fmt.Sprint(l.Round), fmt.Sprint(l.Pairs), fmt.Sprintf("%.0f%%", 100*float64(l.Fraction)), fmt.Sprintf("%+.3g", float64(l.Mean)),
				fmt.Sprintf("[%+.3g, %+.3g]", float64(l.Lo), float64(l.Hi)), fmt.Sprintf("%+.2f", float64(l.Z)), fmt.Sprintf("±%.2f", float64(l.Bound))})
		}
		s.Tables = append(s.Tables, t)
	}
	return s, true
}

// distributionSection draws every metric's trials per variant, the primary metric first.
func distributionSection(r compare.Results) (Section, bool) {
	s := Section{ID: "distributions", Title: "Distributions",
		Intro: "Every finished trial as a dot, over each variant's box (quartiles, whiskers to the extremes). Overlapping boxes are what \"~\" means."}
	rows := slices.Clone(r.Rows)
	slices.SortStableFunc(rows, func(a, b compare.Row) int {
		switch {
		case a.Metric == r.Primary && b.Metric != r.Primary:
			return -1
		case b.Metric == r.Primary && a.Metric != r.Primary:
			return 1
		}
		return 0
	})
	for i, row := range rows {
		d := boxData{Unit: row.Unit}
		for _, c := range row.Cells {
			xs := trialValues(r.Trials, c.Variant, row.Metric, row.Guard)
			d.Variants = append(d.Variants, boxVariant{Name: c.Variant, Values: xs, Box: fiveNumbers(xs)})
		}
		s.Charts = append(s.Charts, Chart{ID: fmt.Sprintf("chart-dist-%d", i), Kind: "box", Title: row.Label(), Height: 260, Data: d})
	}
	return s, len(s.Charts) > 0
}

func sweepSection(r compare.Results) (Section, bool) {
	if r.Sweep == nil {
		return Section{}, false
	}
	for _, row := range r.Rows {
		if row.Metric != r.Primary {
			continue
		}
		d := sweepData{Flag: r.Sweep.Flag, Unit: row.Unit}
		for _, c := range row.Cells {
			if c.Median.N == 0 {
				continue
			}
			d.Points = append(d.Points, sweepPoint{Value: c.Variant, Median: c.Median.Median, Lo: compare.FiniteOr(c.Median.Lo, c.Median.Median),
				Hi: compare.FiniteOr(c.Median.Hi, c.Median.Median), Significant: c.Shift != nil && c.Shift.Significant})
		}
		if len(d.Points) == 0 {
			return Section{}, false
		}
		return Section{ID: "sweep", Title: "Sweep of " + r.Sweep.Flag,
			Intro:  fmt.Sprintf("%s against %s: the median of each value's trials with its interval; red where the change from %s is significant.", row.Metric, r.Sweep.Flag, row.Cells[0].Variant),
			Charts: []Chart{{ID: "chart-sweep", Kind: "sweep", Height: 360, Data: d}}}, true
	}
	return Section{}, false
}

func trialsSection(r compare.Results) Section {
	t := Table{Caption: "In the order they ran", Head: []string{"#", "round", "variant", "status", "guard", r.Primary, "recording"}, Right: []bool{true, true}}
	for _, x := range r.Trials {
		var guard []string
		for _, g := range []string{compare.GuardReady, compare.GuardLatency} {
			if v, ok := x.Guard[g]; ok {
				guard = append(guard, fmt.Sprintf("%s %.3g", g, v))
			}
		}
		primary := "–"
		if v, ok := x.Metrics[r.Primary]; ok {
			primary = fmt.Sprintf("%.4g", v)
		}
		status := x.Status
		if x.Error != "" {
			status += ": " + x.Error
		}
		t.Rows = append(t.Rows, []string{fmt.Sprint(x.Seq), fmt.Sprint(x.Round), x.Variant, status, strings.Join(guard, ", "), primary, x.Recording})
	}
	return Section{ID: "trials", Title: "Trials", Tables: []Table{t}}
}

func trialValues(trials []compare.Trial, variant, metric string, guard bool) []float64 {
	xs := []float64{}
	for _, t := range trials {
		if t.Status != "ok" || t.Variant != variant {
			continue
		}
		m := t.Metrics
		if guard {
			m = t.Guard
		}
		if v, ok := m[metric]; ok && !math.IsNaN(v) {
			xs = append(xs, v)
		}
	}
	return xs
}

// fiveNumbers is min, quartiles and max (gonum's empirical quantiles: values from the data); zeros without values.
func fiveNumbers(xs []float64) [5]float64 {
	if len(xs) == 0 {
		return [5]float64{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	q := func(p float64) float64 { return stat.Quantile(p, stat.Empirical, s, nil) }
	return [5]float64{s[0], q(0.25), q(0.5), q(0.75), s[len(s)-1]}
}
