package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/gonum/stat"

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
	dir, err := os.MkdirTemp("", "tare-bench-noise-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	labDir, rec := filepath.Join(dir, "lab"), filepath.Join(dir, "noise.db")
	if out, err := exec.Command(o.tare, "lab", "up", "--dir", labDir, "--profile", o.profile).CombinedOutput(); err != nil {
		return fmt.Errorf("lab up: %w\n%s", err, out)
	}
	defer func() { _ = exec.Command(o.tare, "lab", "down", "--dir", labDir).Run() }()
	time.Sleep(20 * time.Second) // as an experiment's shared lab settles
	fmt.Printf("measuring the idle %s lab for %s...\n", o.profile, o.noise)
	cmd := exec.Command(o.tare, "measure", "--duration", o.noise.String(), "--interval", "1s", "--record", rec, "-o", "json",
		"--kubeconfig", filepath.Join(labDir, "kubeconfig"))
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("measure: %w\n%s", err, tail(out))
	}
	r, err := record.Read(context.Background(), rec)
	if err != nil {
		return err
	}
	names := component.Names(func(e component.Entry) bool { return e.Core() && e.Role == component.RoleControlPlane })
	per := map[string][]float64{}
	for _, s := range export.Build(r) {
		if g := s.Labels["group"]; s.Metric == "tare_group_cpu_millicores" && slices.Contains(names, g) {
			for _, p := range s.Points {
				per[g] = append(per[g], p.Value)
			}
		}
	}
	n := math.MaxInt
	for _, g := range names {
		n = min(n, len(per[g]))
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
	fmt.Printf("\ncontrol plane (%s), idle %s lab, %d s at 1 s: mean %.2fm\n", strings.Join(names, ", "), o.profile, n, mean)
	fmt.Printf("a trial on one lab costs its window + %s warm-up + %s; a pair two trials; budget %s\n", o.warmup, o.trialOverhead, o.budget)
	fmt.Printf("%8s %7s %14s %20s %6s %14s %12s\n", "window", "windows", "sd", "pair difference sd", "pairs", "detects (80%)", "2% needs")
	for _, w := range []int{5, 10, 20, 30, 60, 120} {
		ms := windowMeans(total, w)
		if len(ms) < 4 {
			continue
		}
		var diffs []float64
		for i := 0; i+1 < len(ms); i += 2 {
			diffs = append(diffs, ms[i+1]-ms[i])
		}
		sd, sdd := stat.StdDev(ms, nil), stat.StdDev(diffs, nil)
		pair := 2 * (time.Duration(w)*time.Second + o.warmup + o.trialOverhead)
		pairs := int(o.budget / pair)
		mde := stats.PairedMDE(pairs, sdd, 0.05, 0.8, 1)
		need := stats.PairedRounds(0.02*mean, sdd, 0.05, 0.8, 1, 100000)
		fmt.Printf("%7ds %7d %7.2fm %4.1f%% %12.2fm %5.1f%% %6d %12.1f%% %10.0f min\n", w, len(ms), sd, 100*sd/mean, sdd, 100*sdd/mean,
			pairs, 100*mde/mean, (time.Duration(need) * pair).Minutes())
	}
	fmt.Printf("\neach component's share of the variance of 20 s windows (and its mean):\n")
	v20 := stat.Variance(windowMeans(total, 20), nil)
	for _, g := range names {
		ms := windowMeans(per[g][:n], 20)
		fmt.Printf("  %-24s %5.1f%%  %.2fm\n", g, 100*stat.Variance(ms, nil)/v20, stat.Mean(per[g][:n], nil))
	}
	fmt.Printf("periods (autocorrelation of the per-second series above 0.2, lag ≤ 150 s):")
	for _, l := range acfPeaks(total, 150, 0.2) {
		fmt.Printf(" %ds (%.2f)", l.lag, l.r)
	}
	fmt.Println()
	return nil
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
