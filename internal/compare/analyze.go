package compare

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/stat"

	"github.com/tare-dev/tare/internal/stats"
	"github.com/tare-dev/tare/internal/warning"
)

// Analyze compares every variant of d with the baseline (d.Variants[0]) over the trials that finished:
// one row per metric measured, one verdict per variant, and the warnings the run calls for (too few
// trials, failures, outliers, drift, the windows' own warnings).
func Analyze(d Design, trials []Trial) Results {
	names := d.Variants
	primary := d.Primary
	r := Results{Name: d.Name, Alpha: d.Alpha, Tolerance: d.Tolerance, Sweep: d.Sweep, Trials: trials}
	values := map[string]map[string][]float64{} // metric -> variant -> values
	guards := map[string]bool{}
	counts := map[string]int{}
	failed := map[string]int{}
	for _, t := range trials {
		if t.Status != "ok" {
			if t.Status == "failed" {
				failed[t.Variant]++
			}
			continue
		}
		counts[t.Variant]++
		add := func(m string, v float64, guard bool) {
			if values[m] == nil {
				values[m] = map[string][]float64{}
			}
			values[m][t.Variant] = append(values[m][t.Variant], v)
			guards[m] = guards[m] || guard
		}
		for m, v := range t.Metrics {
			add(m, v, false)
		}
		for m, v := range t.Guard {
			add(m, v, true)
		}
	}
	primary = PrimaryFor(primary, trials)
	r.Primary = primary
	metrics := make([]string, 0, len(values))
	for m := range values {
		metrics = append(metrics, m)
	}
	for _, m := range Order(metrics, primary) {
		r.Rows = append(r.Rows, compareRow(m, guards[m], names, values[m], d.Alpha))
	}
	if d.Plan != nil {
		r.Plan = d.Plan
		for _, v := range names[1:] {
			r.Sequential = append(r.Sequential, SequentialFor(*d.Plan, trials, names[0], v, primary, d.Alpha))
		}
	}
	r.Verdicts = verdicts(&r, names, counts, failed)
	r.Warnings = warnings(d, trials, counts, primary, values[primary])
	return r
}

// PrimaryFor is the primary metric: the one given, else control-plane-cpu, or node-busy when no trial
// measured the control plane.
func PrimaryFor(primary string, trials []Trial) string {
	if primary != "" {
		return primary
	}
	for _, t := range trials {
		if _, ok := t.Metrics[ControlPlaneCPU]; ok && t.Status == "ok" {
			return ControlPlaneCPU
		}
	}
	return NodeBusy
}

// compareRow puts each variant's values of one metric next to the baseline's (names[0]).
func compareRow(metric string, guard bool, names []string, vals map[string][]float64, alpha float64) Row {
	row := Row{Metric: metric, Unit: Unit(metric), Guard: guard}
	base := vals[names[0]]
	bm := stats.MedianCI(base, 1-alpha)
	for i, v := range names {
		c := Cell{Variant: v, Median: stats.MedianCI(vals[v], 1-alpha)}
		if i > 0 && len(base) > 0 && len(vals[v]) > 0 {
			sh := stats.MannWhitney(base, vals[v], alpha)
			c.Shift = &sh
			c.DeltaPct, c.LoPct, c.HiPct = Num(pctOf(sh.Estimate, bm.Median)), Num(pctOf(sh.Lo, bm.Median)), Num(pctOf(sh.Hi, bm.Median))
			mde, why := minDetectable(base, vals[v], alpha)
			c.MDE, c.MDEPct, c.MDENote = Num(mde), Num(pctOf(mde, bm.Median)), why
			if why == "" && bm.Median == 0 {
				c.MDENote = "the baseline median is 0, so no change is a percentage of it"
			}
		}
		row.Cells = append(row.Cells, c)
	}
	return row
}

// minDetectable is the smallest shift a comparison of a and b could detect (stats.MDE at their pooled
// standard deviation) or, when there is no such number, NaN and why: a metric that did not vary in any trial
// has no noise to size a change against, which is not the same as being able to detect any change.
func minDetectable(a, b []float64, alpha float64) (float64, string) {
	if math.IsInf(stats.MDE(len(a), len(b), 1, alpha), 1) {
		return math.Inf(1), "" // no change at this number of trials; MDEText says so
	}
	switch sd := pooledSD(a, b); {
	case math.IsNaN(sd):
		return math.NaN(), "too few trials to estimate the noise (fewer than 2 on each side)"
	case sd == 0:
		return math.NaN(), "the metric did not vary in any trial"
	default:
		return stats.MDE(len(a), len(b), sd, alpha), ""
	}
}

func pooledSD(a, b []float64) float64 {
	var ss float64
	n := 0
	for _, x := range [][]float64{a, b} {
		if len(x) < 2 {
			continue
		}
		ss += stat.Variance(x, nil) * float64(len(x)-1)
		n += len(x) - 1
	}
	if n == 0 {
		return math.NaN()
	}
	return math.Sqrt(ss / float64(n))
}

func pctOf(x, base float64) float64 {
	if base == 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return math.NaN()
	}
	return 100 * x / base
}

// verdicts: a variant is recommended when its primary metric went down significantly and no guard
// worsened beyond the tolerance.
func verdicts(r *Results, names []string, counts, failed map[string]int) []Verdict {
	var out []Verdict
	for i, v := range names {
		vd := Verdict{Variant: v, Baseline: i == 0, Trials: counts[v], Failed: failed[v], GuardOK: true}
		if i == 0 {
			vd.Summary = "baseline"
			out = append(out, vd)
			continue
		}
		var primary *Cell
		for ri := range r.Rows {
			row := &r.Rows[ri]
			c := &row.Cells[i]
			if row.Metric == r.Primary {
				primary = c
			}
			if !row.Guard || c.Shift == nil {
				continue
			}
			base := row.Cells[0].Median.Median
			if worse := pctOf(c.Median.Median-base, base); worse > r.Tolerance {
				// A cautious reading: a guard that looks worse blocks the recommendation even when the
				// test cannot yet tell it from noise; the note says which it is.
				vd.GuardOK = false
				sig := fmt.Sprintf("significant, p=%.3f", c.Shift.P)
				if !c.Shift.Significant {
					sig = fmt.Sprintf("not significant, p=%.2f: more trials would tell", c.Shift.P)
				}
				vd.Guard = append(vd.Guard, warning.Warning{Code: WarnGuardWorse, Figure: row.Metric, Subject: v,
					Message: fmt.Sprintf("%s %.3g%s vs %.3g%s at baseline (%+.0f%%, beyond the %.0f%% tolerance; %s)",
						row.Metric, c.Median.Median, row.Unit, base, row.Unit, worse, r.Tolerance, sig)})
			}
		}
		switch seq := r.sequentialOf(v); {
		case seq != nil && seq.Decision == Changed && seq.Mean < 0:
			vd.Summary = SequentialText(*seq, *r.Plan, r.Primary)
			vd.Recommended = vd.GuardOK
		case seq != nil:
			vd.Summary = SequentialText(*seq, *r.Plan, r.Primary)
			if seq.Decision == Changed {
				vd.Summary = "worse: " + vd.Summary
			}
		case primary == nil || primary.Shift == nil:
			vd.Summary = "no " + r.Primary + " to compare"
		case !primary.Shift.Significant:
			vd.Summary = fmt.Sprintf("no significant change in %s (p=%.2f; this run could detect %s)", r.Primary, primary.Shift.P, MDEText(*primary))
		case primary.Shift.Estimate < 0:
			vd.Summary = fmt.Sprintf("%s %+.1f%% [%+.1f%%, %+.1f%%], p=%.3f", r.Primary, primary.DeltaPct, primary.LoPct, primary.HiPct, primary.Shift.P)
			vd.Recommended = vd.GuardOK
		default:
			vd.Summary = fmt.Sprintf("%s worse: %+.1f%% [%+.1f%%, %+.1f%%], p=%.3f", r.Primary, primary.DeltaPct, primary.LoPct, primary.HiPct, primary.Shift.P)
		}
		switch {
		case vd.Recommended:
			vd.Summary = "recommended: " + vd.Summary
		case !vd.GuardOK:
			vd.Summary = "not recommended (guard): " + vd.Summary
		}
		out = append(out, vd)
	}
	return out
}

// sequentialOf is variant's sequential answer; nil when the experiment is not sequential.
func (r *Results) sequentialOf(variant string) *Sequential {
	for i := range r.Sequential {
		if r.Sequential[i].Variant == variant {
			return &r.Sequential[i]
		}
	}
	return nil
}

// MDEText says what change a cell's comparison could detect: "±4.6%" of the baseline's median, "no change
// at this number of trials", or "n/a" with the reason there is no such number.
func MDEText(c Cell) string {
	switch {
	case math.IsInf(float64(c.MDE), 1):
		return "no change at this number of trials"
	case c.MDENote != "":
		return "n/a: " + c.MDENote
	case math.IsNaN(float64(c.MDEPct)):
		return "n/a"
	}
	return fmt.Sprintf("±%.1f%%", c.MDEPct)
}
