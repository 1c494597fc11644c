package experiment

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/tare-dev/tare/internal/session"
	"github.com/tare-dev/tare/internal/stats"
)

// Trial is one run of one variant, as recorded.
type Trial struct {
	Seq       int                `json:"seq"`   // position in the run order, from 1
	Round     int                `json:"round"` // which repetition of its variant, from 1
	Variant   string             `json:"variant"`
	Started   time.Time          `json:"started"`
	Status    string             `json:"status"` // ok, failed
	Error     string             `json:"error,omitempty"`
	Metrics   map[string]float64 `json:"metrics,omitempty"`
	Guard     map[string]float64 `json:"guard,omitempty"`
	Recording string             `json:"recording,omitempty"`
	// Warnings are what went wrong in the window without stopping it, each with its sample.
	Warnings []session.Warning `json:"warnings,omitempty"`
}

// Cell is one variant's values of one metric, and how they differ from the baseline's.
type Cell struct {
	Variant  string       `json:"variant"`
	Median   stats.Median `json:"median"`
	Shift    *stats.Shift `json:"shift,omitempty"` // nil for the baseline
	DeltaPct Num          `json:"delta_percent"`   // shift / baseline median
	LoPct    Num          `json:"ci_low_percent"`
	HiPct    Num          `json:"ci_high_percent"`
	MDE      Num          `json:"min_detectable"`         // smallest shift this run could detect (80% power); null: none could
	MDEPct   Num          `json:"min_detectable_percent"` // of the baseline median
}

// Num is a number that may be undefined (a percentage of zero) or infinite (an effect no number of trials
// of this size could detect): JSON null then.
type Num float64

// MarshalJSON writes null for NaN and ±Inf.
func (n Num) MarshalJSON() ([]byte, error) {
	if math.IsNaN(float64(n)) || math.IsInf(float64(n), 0) {
		return []byte("null"), nil
	}
	return json.Marshal(float64(n))
}

// UnmarshalJSON reads null as NaN.
func (n *Num) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*n = Num(math.NaN())
		return nil
	}
	var f float64
	err := json.Unmarshal(b, &f)
	*n = Num(f)
	return err
}

// Row is one metric across the variants (the baseline first).
type Row struct {
	Metric string `json:"metric"`
	Unit   string `json:"unit"`
	Guard  bool   `json:"guard,omitempty"`
	Cells  []Cell `json:"cells"`
}

// Label names the row as tables and charts show it: "metric (unit)", "guard: " first for a guard.
func (r Row) Label() string {
	name := r.Metric + " (" + r.Unit + ")"
	if r.Guard {
		name = "guard: " + name
	}
	return name
}

// Verdict is what a variant's results say.
type Verdict struct {
	Variant     string   `json:"variant"`
	Baseline    bool     `json:"baseline,omitempty"`
	Trials      int      `json:"trials"`
	Failed      int      `json:"failed,omitempty"`
	GuardOK     bool     `json:"guard_ok"`
	Guard       []string `json:"guard_notes,omitempty"`
	Recommended bool     `json:"recommended"`
	Summary     string   `json:"summary"`
}

// Results are an experiment's (or a diff's) comparisons.
type Results struct {
	Name      string    `json:"name"`
	Alpha     float64   `json:"alpha"`
	Primary   string    `json:"primary"`
	Tolerance float64   `json:"guard_tolerance_percent"`
	Rows      []Row     `json:"rows"`
	Verdicts  []Verdict `json:"verdicts"`
	Warnings  []string  `json:"warnings,omitempty"`
	Sweep     *Sweep    `json:"sweep,omitempty"`
	Trials    []Trial   `json:"trials"`
}

// Analyze compares every variant with the baseline. variants is the spec's order, baseline first or not.
func Analyze(spec *Spec, trials []Trial) Results {
	names := make([]string, 0, len(spec.Variants))
	base := spec.Baseline().Name
	names = append(names, base)
	for _, v := range spec.Variants {
		if v.Name != base {
			names = append(names, v.Name)
		}
	}
	primary := spec.Primary
	r := Results{Name: spec.Name, Alpha: spec.Alpha, Tolerance: float64(spec.Guard.Tolerance), Sweep: spec.Sweep, Trials: trials}
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
	if primary == "" {
		primary = "control-plane-cpu"
		if _, ok := values[primary]; !ok {
			primary = "node-busy"
		}
	}
	r.Primary = primary
	metrics := make([]string, 0, len(values))
	for m := range values {
		metrics = append(metrics, m)
	}
	for _, m := range order(metrics, primary) {
		r.Rows = append(r.Rows, compareRow(m, guards[m], names, values[m], spec.Alpha))
	}
	r.Verdicts = verdicts(&r, names, counts, failed)
	r.Warnings = warnings(spec, trials, names, counts, primary, values[primary])
	return r
}

// compareRow puts each variant's values of one metric next to the baseline's (names[0]).
func compareRow(metric string, guard bool, names []string, vals map[string][]float64, alpha float64) Row {
	row := Row{Metric: metric, Unit: unit(metric), Guard: guard}
	base := vals[names[0]]
	bm := stats.MedianCI(base, 1-alpha)
	for i, v := range names {
		c := Cell{Variant: v, Median: stats.MedianCI(vals[v], 1-alpha)}
		if i > 0 && len(base) > 0 && len(vals[v]) > 0 {
			sh := stats.MannWhitney(base, vals[v], alpha)
			c.Shift = &sh
			c.DeltaPct, c.LoPct, c.HiPct = Num(pctOf(sh.Estimate, bm.Median)), Num(pctOf(sh.Lo, bm.Median)), Num(pctOf(sh.Hi, bm.Median))
			mde := stats.MDE(len(base), len(vals[v]), pooledSD(base, vals[v]), alpha)
			c.MDE, c.MDEPct = Num(mde), Num(pctOf(mde, bm.Median))
		}
		row.Cells = append(row.Cells, c)
	}
	return row
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
				vd.Guard = append(vd.Guard, fmt.Sprintf("%s %.3g%s vs %.3g%s at baseline (%+.0f%%, beyond the %.0f%% tolerance; %s)",
					row.Metric, c.Median.Median, row.Unit, base, row.Unit, worse, r.Tolerance, sig))
			}
		}
		switch {
		case primary == nil || primary.Shift == nil:
			vd.Summary = "no " + r.Primary + " to compare"
		case !primary.Shift.Significant:
			vd.Summary = fmt.Sprintf("no significant change in %s (p=%.2f; this run could detect %s)", r.Primary, primary.Shift.P, mdeText(*primary))
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

func mdeText(c Cell) string {
	if math.IsInf(float64(c.MDE), 1) || math.IsNaN(float64(c.MDE)) {
		return "no change at this number of trials"
	}
	return fmt.Sprintf("±%.1f%%", c.MDEPct)
}

// warnings: too few trials, failed trials, outliers in the primary metric, drift across the run.
func warnings(spec *Spec, trials []Trial, names []string, counts map[string]int, primary string, vals map[string][]float64) []string {
	var w []string
	obs := spec.observation
	if obs == "" {
		obs = "trial"
	}
	for _, v := range names {
		if n := counts[v]; n < 4 {
			w = append(w, fmt.Sprintf("%s has %d %s(s): with fewer than 4 on each side no difference can be significant at alpha %.2g (Mann–Whitney's smallest p for 3 against 3 is 0.10)", v, n, obs, spec.Alpha))
		}
	}
	planned := 0
	for _, t := range trials {
		switch t.Status {
		case "failed":
			w = append(w, fmt.Sprintf("trial %d (%s) failed and is left out: %s", t.Seq, t.Variant, t.Error))
		case "planned":
			planned++
		}
	}
	if planned > 0 {
		w = append(w, fmt.Sprintf("%d of %d trials not run yet (interrupted): these results are partial", planned, len(trials)))
	}
	for _, v := range names {
		xs := vals[v]
		if len(xs) < 4 {
			continue
		}
		med, mad := stats.Robust(xs)
		for _, x := range xs {
			if mad > 0 && math.Abs(x-med) > 3*mad {
				w = append(w, fmt.Sprintf("outlier: a trial of %s measured %s %.1f%s, more than 3 MAD from the variant's median %.1f; kept (the rank test is robust to it)", v, primary, x, unit(primary), med))
			}
		}
	}
	if rho, p, n := drift(trials, primary); n >= 6 && p < 0.05 {
		w = append(w, fmt.Sprintf("drift: %s moved with time (Spearman ρ=%.2f over %d %ss, p=%.3f): noise that a longer run or more interleaving evens out", primary, rho, n, obs, p))
	}
	return append(w, trialWarnings(trials)...)
}

// trialWarnings are the warnings of the trials' windows, one line per message with the trials and samples
// it arose in (the first five).
func trialWarnings(trials []Trial) []string {
	var msgs []string
	where := map[string][]string{}
	for _, t := range trials {
		for _, x := range t.Warnings {
			if _, ok := where[x.Message]; !ok {
				msgs = append(msgs, x.Message)
			}
			where[x.Message] = append(where[x.Message], fmt.Sprintf("trial %d sample %d", t.Seq, x.Seq))
		}
	}
	out := make([]string, 0, len(msgs))
	for _, m := range msgs {
		at := where[m]
		list := strings.Join(at[:min(5, len(at))], ", ")
		if len(at) > 5 {
			list += fmt.Sprintf(" and %d more", len(at)-5)
		}
		out = append(out, fmt.Sprintf("window warning in %s: %s", list, m))
	}
	return out
}

// drift correlates each trial's primary metric, less its variant's median, with its place in the run.
func drift(trials []Trial, primary string) (rho, p float64, n int) {
	byVariant := map[string][]float64{}
	for _, t := range trials {
		if v, ok := t.Metrics[primary]; ok && t.Status == "ok" {
			byVariant[t.Variant] = append(byVariant[t.Variant], v)
		}
	}
	med := map[string]float64{}
	for k, v := range byVariant {
		med[k] = stats.MedianOf(v)
	}
	var seq, res []float64
	for _, t := range trials {
		if v, ok := t.Metrics[primary]; ok && t.Status == "ok" {
			seq = append(seq, float64(t.Seq))
			res = append(res, v-med[t.Variant])
		}
	}
	n = len(seq)
	if n < 3 {
		return 0, 1, n
	}
	rho = stat.Correlation(ranks(seq), ranks(res), nil)
	if math.IsNaN(rho) || math.Abs(rho) >= 1 {
		return rho, 0, n
	}
	tv := rho * math.Sqrt(float64(n-2)/(1-rho*rho))
	p = 2 * distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(n - 2)}.CDF(-math.Abs(tv))
	return rho, p, n
}

// ranks of xs (average ranks for ties), from 1.
func ranks(xs []float64) []float64 {
	idx := make([]int, len(xs))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return xs[idx[a]] < xs[idx[b]] })
	r := make([]float64, len(xs))
	for i := 0; i < len(idx); {
		j := i
		for j < len(idx) && xs[idx[j]] == xs[idx[i]] {
			j++
		}
		for k := i; k < j; k++ {
			r[idx[k]] = float64(i+j+1) / 2
		}
		i = j
	}
	return r
}
