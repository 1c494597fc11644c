package compare

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
)

// JSON writes the results as indented JSON. A variant without trials has an empty median (n = 0), written
// as zeros. r is left as it was: the zeros are written from a copy of its rows.
func (r Results) JSON(w io.Writer) error {
	r.Rows = zeroEmptyMedians(r.Rows)
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// Table writes the results as benchstat does: one row per metric, each variant's median ± interval, and
// the change from the baseline with its interval and p-value, or ~ when it is not significant.
func (r Results) Table(w io.Writer) error {
	var b strings.Builder
	ok := 0
	for _, t := range r.Trials {
		if t.Status == "ok" {
			ok++
		}
	}
	fmt.Fprintf(&b, "%s: %d trials (%d ok), α = %.2g, primary metric %s; medians with %.0f%% intervals, changes by Mann–Whitney U with Hodges–Lehmann intervals\n\n",
		r.Name, len(r.Trials), ok, r.Alpha, r.Primary, 100*(1-r.Alpha))
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	head := []string{"METRIC"}
	for i, c := range r.rowCells() {
		if i == 0 {
			head = append(head, c+" (baseline)")
			continue
		}
		head = append(head, c, "vs baseline")
	}
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for _, row := range r.Rows {
		cols := []string{row.Label()}
		for i, c := range row.Cells {
			cols = append(cols, MedianText(c))
			if i > 0 {
				cols = append(cols, ChangeText(c))
			}
		}
		fmt.Fprintln(tw, strings.Join(cols, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	b.WriteString("\n")
	for _, v := range r.Verdicts {
		if v.Baseline {
			continue
		}
		fmt.Fprintf(&b, "%s: %s (%d trials", v.Variant, v.Summary, v.Trials)
		if v.Failed > 0 {
			fmt.Fprintf(&b, ", %d failed", v.Failed)
		}
		b.WriteString(")\n")
		for _, g := range v.Guard {
			fmt.Fprintf(&b, "  guard: %s\n", g.Message)
		}
	}
	if p := r.Plan; p != nil {
		fmt.Fprintf(&b, "\nsequential (%s):\n  plan: detect ±%.1f%% of %s (%.4g at baseline) with 80%% power: up to %d rounds, looks from round %d; noise of one pair %.3g (%s)\n",
			p.Method(), p.MDEPct, r.Primary, p.Base, p.MaxRounds, p.FirstLook, p.Sigma, p.Pilot)
		if t := p.BudgetText(); t != "" {
			fmt.Fprintf(&b, "  %s\n", t)
		}
		for _, s := range r.Sequential {
			fmt.Fprintf(&b, "  %s: %d pairs, %d looks; sensitivity reached ±%.1f%% (asked ±%.1f%%: %s)", s.Variant, s.Pairs, len(s.Looks),
				float64(s.ReachedPct), p.MDEPct, map[bool]string{true: "reached", false: "not reached"}[s.Reached])
			if sr := s.SignedRank; sr != nil && !math.IsNaN(sr.P) {
				fmt.Fprintf(&b, "; signed-rank p=%.3g", sr.P)
			}
			b.WriteString("\n")
		}
	}
	if r.Sweep != nil {
		b.WriteString("\n")
		b.WriteString(r.chart())
	}
	if len(r.Warnings) > 0 {
		b.WriteString("\nwarnings:\n")
		for _, x := range r.Warnings {
			fmt.Fprintf(&b, "  - %s\n", x.Message)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// zeroEmptyMedians returns a copy of rows whose medians of no value (NaN, which JSON cannot hold) are
// zeros. The rows and cells passed in are not changed: a Results value shares them with its copies.
func zeroEmptyMedians(rows []Row) []Row {
	out := slices.Clone(rows)
	for i := range out {
		out[i].Cells = slices.Clone(out[i].Cells)
		for j := range out[i].Cells {
			if m := &out[i].Cells[j].Median; m.N == 0 {
				m.Median, m.Lo, m.Hi = 0, 0, 0
			}
		}
	}
	return out
}

func (r Results) rowCells() []string {
	if len(r.Rows) == 0 {
		var out []string
		for _, v := range r.Verdicts {
			out = append(out, v.Variant)
		}
		return out
	}
	var out []string
	for _, c := range r.Rows[0].Cells {
		out = append(out, c.Variant)
	}
	return out
}

// MedianText is a cell's median with its interval and n, as the table prints it.
func MedianText(c Cell) string {
	m := c.Median
	if m.N == 0 {
		return "–"
	}
	if m.N == 1 {
		return fmt.Sprintf("%.4g (n=1)", m.Median)
	}
	return fmt.Sprintf("%.4g [%.4g, %.4g] n=%d", m.Median, m.Lo, m.Hi, m.N)
}

// ChangeText is a cell's change from the baseline with its interval and p, or ~ when not significant: in
// percent of the baseline, or in the metric's unit when the baseline is zero.
func ChangeText(c Cell) string {
	s := c.Shift
	if s == nil || math.IsNaN(s.P) {
		return "–"
	}
	if !s.Significant {
		return fmt.Sprintf("~ (p=%.2f)", s.P)
	}
	if d := float64(c.DeltaPct); math.IsNaN(d) || math.IsInf(d, 0) {
		// A baseline of zero (a DaemonSet's cost where none runs) has no percentage: the shift itself.
		return fmt.Sprintf("%+.4g [%+.4g, %+.4g] p=%.3f", s.Estimate, s.Lo, s.Hi, s.P)
	}
	return fmt.Sprintf("%+.1f%% [%+.1f%%, %+.1f%%] p=%.3f", c.DeltaPct, c.LoPct, c.HiPct, s.P)
}

// chart draws the primary metric against the swept value: one line per value, a bar to the median and
// the interval marked, so the shape of the curve shows at a glance.
func (r Results) chart() string {
	var row *Row
	for i := range r.Rows {
		if r.Rows[i].Metric == r.Primary {
			row = &r.Rows[i]
		}
	}
	if row == nil {
		return ""
	}
	hi := 0.0
	for _, c := range row.Cells {
		hi = math.Max(hi, FiniteOr(c.Median.Hi, c.Median.Median))
	}
	if hi <= 0 {
		return ""
	}
	const width = 50
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%s) against %s; ▇ median, ├─┤ interval, * significant change from %s\n", row.Metric, row.Unit, r.Sweep.Flag, row.Cells[0].Variant)
	for _, c := range row.Cells {
		pos := func(x float64) int { return int(math.Round(x / hi * width)) }
		line := []rune(strings.Repeat(" ", width+1))
		for i := 0; i < pos(c.Median.Median) && i <= width; i++ {
			line[i] = '▇'
		}
		if lo, h := FiniteOr(c.Median.Lo, c.Median.Median), FiniteOr(c.Median.Hi, c.Median.Median); c.Median.N > 1 {
			for i := pos(lo); i <= pos(h) && i <= width; i++ {
				if line[i] == ' ' {
					line[i] = '─'
				}
			}
			line[min(pos(lo), width)], line[min(pos(h), width)] = '├', '┤'
		}
		mark := " "
		if c.Shift != nil && c.Shift.Significant {
			mark = "*"
		}
		fmt.Fprintf(&b, "  %12s %s %s %.4g\n", c.Variant, mark, string(line), c.Median.Median)
	}
	return b.String()
}

// FiniteOr is x, or alt when x is NaN or infinite (an interval bound too few trials could not set).
func FiniteOr(x, alt float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return alt
	}
	return x
}
