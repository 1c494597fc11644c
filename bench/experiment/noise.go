package main

import (
	"context"
	"encoding/csv"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/tare-dev/tare/internal/component"
	"github.com/tare-dev/tare/internal/export"
	"github.com/tare-dev/tare/internal/record"
	"github.com/tare-dev/tare/internal/stats"
)

// noise is where the primary metric's variance comes from (-noise D): one upstream lab, settled, measured
// by tare for D at 1 s (recorded), and from the recording the control plane's CPU second by second (the
// experiments' primary metric, each component's group). For each window length it prints the spread of
// back-to-back windows, the spread of the difference of adjacent windows (the pairs of a paired design on
// one lab), the pairs that fit in the budget and the smallest change they detect with 80% power, and how
// long 2% would take; then each component's share of the variance and the periods of the per-second series.
func noise(o options) error {
	names := component.Names(func(e component.Entry) bool { return e.Core() && e.Role == component.RoleControlPlane })
	var per map[string][]float64
	var err error
	source := fmt.Sprintf("idle %s lab", o.profile)
	if o.noiseFrom != "" {
		names, per, err = readSeries(o.noiseFrom)
		source = o.noiseFrom
	} else {
		per, err = measureNoise(o, names)
	}
	if err != nil {
		return err
	}
	n := math.MaxInt
	for _, g := range names {
		n = min(n, len(per[g]))
	}
	if o.noiseCSV != "" && n != math.MaxInt {
		// Kept before any check: a series too short for the tables is still 14 minutes of a lab.
		if err := writeSeries(o.noiseCSV, names, per, n); err != nil {
			return err
		}
		fmt.Printf("per-second series: %s\n", o.noiseCSV)
	}
	if n == math.MaxInt || n < 240 {
		return fmt.Errorf("the recording has %d seconds of the control plane's groups %v: want 4 minutes or more", n, names)
	}
	total := make([]float64, n)
	for _, g := range names {
		for i := range n {
			total[i] += per[g][i]
		}
	}
	mean := stat.Mean(total, nil)
	fmt.Printf("\ncontrol plane (%s), %s, %d s at 1 s: mean %.2fm\n", strings.Join(names, ", "), source, n, mean)
	fmt.Printf("a trial on one lab costs its window + %s warm-up + %s; a pair two trials; budget %s\n", o.warmup, o.trialOverhead, o.budget)
	fmt.Printf("%8s %7s %14s %20s %6s %14s %12s\n", "window", "windows", "sd", "pair difference sd", "pairs", "detects (80%)", "2% needs")
	for _, w := range []int{5, 10, 20, 30, 60, 120} {
		if r, ok := spread(o, total, w); ok {
			fmt.Printf("%7ds %7d %7.2fm %4.1f%% %12.2fm %5.1f%% %6d %12.1f%% %10.0f min\n", w, r.windows, r.sd, 100*r.sd/mean, r.sdd,
				100*r.sdd/mean, r.pairs, 100*r.mde/mean, r.needs.Minutes())
		}
	}
	fmt.Printf("\neach component: its share of the variance of 20 s windows, its mean, and as a primary metric of its own\n")
	fmt.Printf("(20 s windows: sd, pair difference sd, the change the budget detects, the time 2%% of it needs):\n")
	v20 := stat.Variance(windowMeans(total, 20), nil)
	for _, g := range names {
		ms, m := windowMeans(per[g][:n], 20), stat.Mean(per[g][:n], nil)
		r, _ := spread(o, per[g][:n], 20)
		fmt.Printf("  %-24s %5.1f%%  %6.2fm  sd %5.1f%%  pair sd %5.1f%%  detects %5.1f%%  2%% needs %6.0f min\n", g,
			100*stat.Variance(ms, nil)/v20, m, 100*r.sd/m, 100*r.sdd/m, 100*r.mde/m, r.needs.Minutes())
	}
	fmt.Printf("periods (autocorrelation of the per-second series above 0.2, lag ≤ 150 s):")
	peaks := acfPeaks(total, 150, 0.2)
	for _, l := range peaks {
		fmt.Printf(" %ds (%.2f)", l.lag, l.r)
	}
	fmt.Println()
	bounds(o, total, peaks)
	return nil
}

// bounds is what two designs that work with the periods could reach at best, on the same series: the
// strongest period of 30 s or more is P. Phase-matched pairs put each window against the one P later
// (the periodic part cancels, the drift over P does not). An oracle knows the periodic part exactly (the
// series' own mean at each phase of P, subtracted; its fit to these few cycles is corrected by k/(k-1))
// and measures every second of the budget (no warm-up, no restart): no design on one lab does better than
// its figure, short of making the lab itself quieter.
func bounds(o options, xs []float64, peaks []peak) {
	var p peak
	for _, l := range peaks {
		if l.lag >= 30 && l.r > p.r {
			p = l
		}
	}
	k := len(xs) / max(p.lag, 1)
	if p.lag == 0 || k < 3 {
		return
	}
	fmt.Printf("\nwith the %d s period (%d cycles): the smallest change 80%% power detects in %s\n", p.lag, k, o.budget)
	fmt.Printf("%8s %24s %30s\n", "window", "phase-matched pairs", "oracle, every second measured")
	for _, w := range []int{2, 5, 10, 20, 30} {
		b := periodBounds(o, xs, p.lag, w)
		cell := func(pct float64, pairs int) string {
			if math.IsNaN(pct) {
				return "-"
			}
			return fmt.Sprintf("%.1f%% (%d pairs)", pct, pairs)
		}
		fmt.Printf("%7ds %24s %30s\n", w, cell(b.matched, b.matchedPairs), cell(b.oracle, b.oraclePairs))
	}
	if side := sideBySide(o, xs, p.lag); !math.IsNaN(side) {
		fmt.Printf("two labs side by side (an estimate: both measured all the time, their periodic parts in phase, each lab's\n"+
			"drift its own, from the spread of %d s batch means): %.1f%%\n", p.lag, side)
	}
}

// sideBySide estimates what two labs measured at once detect in the budget, % of the mean: the difference
// of their means over the budget, each lab's drift its own and the periodic parts in phase. A batch as long
// as the period holds every phase once, so the spread of back-to-back batch means (times the batch's
// length: the long-run variance of the per-second series) is what is left for the mean over the budget,
// autocorrelation included; two labs' differ by √2 of it. NaN with fewer than three batches.
func sideBySide(o options, xs []float64, period int) float64 {
	ms := windowMeans(xs, period)
	if len(ms) < 3 || o.budget <= 0 {
		return math.NaN()
	}
	longRun := float64(period) * stat.Variance(ms, nil)
	sd := math.Sqrt2 * math.Sqrt(longRun/o.budget.Seconds())
	z := distuv.UnitNormal.Quantile(1-0.05/2) + distuv.UnitNormal.Quantile(0.8) // the mean over the budget is about normal
	return 100 * z * sd / stat.Mean(xs, nil)
}

// periodBound is what phase-matched pairs and the oracle detect with windows of one length, % of the
// series' mean (NaN: too few windows, or the window does not divide the period for matched pairs).
type periodBound struct {
	matched, oracle           float64
	matchedPairs, oraclePairs int
}

func periodBounds(o options, xs []float64, period, w int) periodBound {
	b := periodBound{matched: math.NaN(), oracle: math.NaN()}
	k := len(xs) / period
	if k < 3 {
		return b
	}
	mean := stat.Mean(xs, nil)
	xs = xs[:k*period]
	if period%w == 0 {
		ms, lag := windowMeans(xs, w), period/w
		var d []float64
		for i := 0; i+lag < len(ms); i++ {
			d = append(d, ms[i+lag]-ms[i])
		}
		b.matchedPairs = int(o.budget / (2 * (time.Duration(w)*time.Second + o.warmup + o.trialOverhead)))
		if len(d) >= 3 {
			b.matched = 100 * stats.PairedMDE(b.matchedPairs, stat.StdDev(d, nil), 0.05, 0.8, 1) / mean
		}
	}
	residual := make([]float64, len(xs))
	for ph := range period {
		var m float64
		for c := range k {
			m += xs[c*period+ph]
		}
		m /= float64(k)
		for c := range k {
			residual[c*period+ph] = xs[c*period+ph] - m
		}
	}
	d := pairDiffs(windowMeans(residual, w))
	b.oraclePairs = int(o.budget / (2 * time.Duration(w) * time.Second))
	if len(d) >= 3 {
		sd := stat.StdDev(d, nil) * math.Sqrt(float64(k)/float64(k-1))
		b.oracle = 100 * stats.PairedMDE(b.oraclePairs, sd, 0.05, 0.8, 1) / mean
	}
	return b
}

// measureNoise is the idle lab's per-second CPU of each group named: one upstream lab, settled, measured
// by tare for o.noise at 1 s, recorded.
func measureNoise(o options, names []string) (map[string][]float64, error) {
	dir, err := os.MkdirTemp("", "tare-bench-noise-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	labDir, rec := filepath.Join(dir, "lab"), filepath.Join(dir, "noise.db")
	if out, err := exec.Command(o.tare, "lab", "up", "--dir", labDir, "--profile", o.profile).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("lab up: %w\n%s", err, out)
	}
	defer func() { _ = exec.Command(o.tare, "lab", "down", "--dir", labDir).Run() }()
	time.Sleep(20 * time.Second) // as an experiment's shared lab settles
	fmt.Printf("measuring the idle %s lab for %s...\n", o.profile, o.noise)
	cmd := exec.Command(o.tare, "measure", "--duration", o.noise.String(), "--interval", "1s", "--record", rec, "-o", "json",
		"--kubeconfig", filepath.Join(labDir, "kubeconfig"))
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("measure: %w\n%s", err, tail(out))
	}
	r, err := record.Read(context.Background(), rec)
	if err != nil {
		return nil, err
	}
	per := map[string][]float64{}
	for _, s := range export.Build(r) {
		if g := s.Labels["group"]; s.Metric == "tare_group_cpu_millicores" && slices.Contains(names, g) {
			for _, p := range s.Points {
				per[g] = append(per[g], p.Value)
			}
		}
	}
	return per, nil
}

// readSeries reads a CSV writeSeries wrote: its groups and their per-second series.
func readSeries(path string) ([]string, map[string][]float64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer func() { _ = f.Close() }()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(rows) < 2 {
		return nil, nil, fmt.Errorf("%s: no rows under its header", path)
	}
	names, per := rows[0], map[string][]float64{}
	for j, name := range names {
		if name == "" || slices.Contains(names[:j], name) {
			return nil, nil, fmt.Errorf("%s: column %d of the header is empty or named twice (%q)", path, j+1, name)
		}
	}
	for i, row := range rows[1:] {
		for j, cell := range row {
			v, err := strconv.ParseFloat(cell, 64)
			if err == nil && (math.IsNaN(v) || math.IsInf(v, 0) || v < 0) {
				err = fmt.Errorf("%q is not a CPU figure", cell)
			}
			if err != nil {
				return nil, nil, fmt.Errorf("%s: row %d, %s: %w", path, i+2, names[j], err)
			}
			per[names[j]] = append(per[names[j]], v)
		}
	}
	return names, per, nil
}

// windowSpread is one window length's figures for a per-second series: the spread of back-to-back windows,
// of the difference of adjacent ones, the pairs the budget holds, what they detect and what 2% of the
// series' mean needs.
type windowSpread struct {
	windows, pairs int
	sd, sdd, mde   float64
	needs          time.Duration
}

func spread(o options, xs []float64, w int) (windowSpread, bool) {
	ms := windowMeans(xs, w)
	if len(ms) < 4 {
		return windowSpread{}, false
	}
	r := windowSpread{windows: len(ms), sd: stat.StdDev(ms, nil), sdd: stat.StdDev(pairDiffs(ms), nil)}
	pair := 2 * (time.Duration(w)*time.Second + o.warmup + o.trialOverhead)
	r.pairs = int(o.budget / pair)
	r.mde = stats.PairedMDE(r.pairs, r.sdd, 0.05, 0.8, 1)
	r.needs = time.Duration(stats.PairedRounds(0.02*stat.Mean(xs, nil), r.sdd, 0.05, 0.8, 1, 100000)) * pair
	return r, true
}

// writeSeries writes the per-second series as CSV: one column a group, one row a second.
func writeSeries(path string, names []string, per map[string][]float64, n int) error {
	var b strings.Builder
	b.WriteString(strings.Join(names, ",") + "\n")
	for i := range n {
		for j, g := range names {
			if j > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, "%.4f", per[g][i])
		}
		b.WriteByte('\n')
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// pairDiffs are the differences of back-to-back windows taken two by two (the second minus the first): the
// pairs of a paired design on one lab.
func pairDiffs(ms []float64) []float64 {
	var d []float64
	for i := 0; i+1 < len(ms); i += 2 {
		d = append(d, ms[i+1]-ms[i])
	}
	return d
}

// windowMeans are the means of back-to-back windows of w points.
func windowMeans(xs []float64, w int) []float64 {
	var out []float64
	for i := 0; i+w <= len(xs); i += w {
		out = append(out, stat.Mean(xs[i:i+w], nil))
	}
	return out
}

type peak struct {
	lag int
	r   float64
}

// acfPeaks are the local maxima of the autocorrelation up to maxLag that reach min.
func acfPeaks(xs []float64, maxLag int, floor float64) []peak {
	m, v := stat.Mean(xs, nil), stat.Variance(xs, nil)
	acf := func(l int) float64 {
		var s float64
		for i := 0; i+l < len(xs); i++ {
			s += (xs[i] - m) * (xs[i+l] - m)
		}
		return s / float64(len(xs)-1) / v
	}
	r := make([]float64, maxLag+2)
	for l := 1; l <= maxLag+1 && l < len(xs)/2; l++ {
		r[l] = acf(l)
	}
	var out []peak
	for l := 2; l <= maxLag && l+1 < len(r); l++ {
		if r[l] >= floor && r[l] > r[l-1] && r[l] >= r[l+1] {
			out = append(out, peak{l, r[l]})
		}
	}
	return out
}

func tail(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-10):], "\n")
}
