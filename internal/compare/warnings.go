package compare

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/tare-dev/tare/internal/stats"
	"github.com/tare-dev/tare/internal/warning"
)

// Warning codes of a comparison.
const (
	// WarnTooFewTrials: a variant has too few trials for any difference to be significant.
	WarnTooFewTrials = "too-few-trials"
	// WarnFailedTrial: a trial failed and is left out.
	WarnFailedTrial = "failed-trial"
	// WarnPartial: trials were planned and not run (the run was interrupted).
	WarnPartial = "partial"
	// WarnOutlier: a trial's primary metric lies more than 3 MAD from its variant's median.
	WarnOutlier = "outlier"
	// WarnDrift: the primary metric moved with time across the run.
	WarnDrift = "drift"
	// WarnGuardWorse: a guard metric is worse than the tolerance against the baseline.
	WarnGuardWorse = "guard-worse"
	// WarnWindow prefixes the code of a warning raised in a trial's window (window-source, window-skipped,
	// window-sink: the session's kinds).
	WarnWindow = "window-"
)

// Figures a comparison's warnings qualify, besides a metric's name (its row).
const (
	FigureP      = "p"      // every comparison's p of the warning's subject (a variant)
	FigureTrials = "trials" // the trials counted
)

// warnings: too few trials, failed trials, outliers in the primary metric, drift across the run.
func warnings(d Design, trials []Trial, counts map[string]int, primary string, vals map[string][]float64) []warning.Warning {
	var w []warning.Warning
	obs := d.Observation
	if obs == "" {
		obs = "trial"
	}
	for _, v := range d.Variants {
		if n := counts[v]; n < 4 {
			w = append(w, warning.Warning{Code: WarnTooFewTrials, Figure: FigureP, Subject: v,
				Message: fmt.Sprintf("%s has %d %s(s): with fewer than 4 on each side no difference can be significant at alpha %.2g (Mann–Whitney's smallest p for 3 against 3 is 0.10)", v, n, obs, d.Alpha),
				Cause:   "a short run, failed trials, or trials stopped early"})
		}
	}
	planned := 0
	for _, t := range trials {
		switch t.Status {
		case "failed":
			w = append(w, warning.Warning{Code: WarnFailedTrial, Figure: FigureTrials, Subject: t.Variant,
				Message: fmt.Sprintf("trial %d (%s) failed and is left out: %s", t.Seq, t.Variant, t.Error)})
		case "planned":
			planned++
		}
	}
	if planned > 0 {
		w = append(w, warning.Warning{Code: WarnPartial, Figure: FigureTrials,
			Message: fmt.Sprintf("%d of %d trials not run yet (interrupted): these results are partial", planned, len(trials)),
			Cause:   "the run was interrupted; --resume runs the rest"})
	}
	for _, v := range d.Variants {
		xs := vals[v]
		if len(xs) < 4 {
			continue
		}
		med, mad := stats.Robust(xs)
		for _, x := range xs {
			if mad > 0 && math.Abs(x-med) > 3*mad {
				w = append(w, warning.Warning{Code: WarnOutlier, Figure: primary, Subject: v,
					Message: fmt.Sprintf("outlier: a trial of %s measured %s %.1f%s, more than 3 MAD from the variant's median %.1f; kept (the rank test is robust to it)", v, primary, x, Unit(primary), med)})
			}
		}
	}
	if rho, p, n := drift(trials, primary); n >= 6 && p < 0.05 {
		w = append(w, warning.Warning{Code: WarnDrift, Figure: primary,
			Message: fmt.Sprintf("drift: %s moved with time (Spearman ρ=%.2f over %d %ss, p=%.3f): noise that a longer run or more interleaving evens out", primary, rho, n, obs, p),
			Cause:   "the node's load changed during the run (other work, a warming cache, a slow leak)"})
	}
	return append(w, trialWarnings(trials)...)
}

// trialWarnings are the warnings of the trials' windows, one per message with the trials and samples it
// arose in (the first five).
func trialWarnings(trials []Trial) []warning.Warning {
	type seen struct {
		kind string
		at   []string
	}
	var msgs []string
	where := map[string]*seen{}
	for _, t := range trials {
		for _, x := range t.Warnings {
			e, ok := where[x.Message]
			if !ok {
				msgs = append(msgs, x.Message)
				e = &seen{kind: string(x.Kind)}
				where[x.Message] = e
			}
			e.at = append(e.at, fmt.Sprintf("trial %d sample %d", t.Seq, x.Seq))
		}
	}
	out := make([]warning.Warning, 0, len(msgs))
	for _, m := range msgs {
		e := where[m]
		list := strings.Join(e.at[:min(5, len(e.at))], ", ")
		if len(e.at) > 5 {
			list += fmt.Sprintf(" and %d more", len(e.at)-5)
		}
		out = append(out, warning.Warning{Code: WarnWindow + e.kind, Figure: FigureTrials, Subject: list,
			Message: fmt.Sprintf("window warning in %s: %s", list, m)})
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
	if math.IsNaN(rho) {
		return rho, 1, n // the residuals never varied: nothing moved with time
	}
	if math.Abs(rho) >= 1 {
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
