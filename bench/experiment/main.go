// Command experiment is the experiment benchmark (make bench): how long an A/B run on this machine needs
// to detect a 5% change in control-plane CPU at 95% confidence. It runs an A/A experiment (the same
// upstream lab as both variants) with tare experiment, takes the noise between trials from it, checks
// that A/A finds no difference, and works out the trials and minutes a 5% effect needs.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

type results struct {
	Rows []struct {
		Metric string `json:"metric"`
		Cells  []struct {
			Variant string `json:"variant"`
			Median  struct {
				Median float64 `json:"median"`
			} `json:"median"`
			Shift *struct {
				P           float64 `json:"p"`
				Significant bool    `json:"significant"`
			} `json:"shift"`
		} `json:"cells"`
	} `json:"rows"`
	Trials []struct {
		Variant string             `json:"variant"`
		Status  string             `json:"status"`
		Started time.Time          `json:"started"`
		Metrics map[string]float64 `json:"metrics"`
	} `json:"trials"`
}

func main() {
	tare := flag.String("tare", "bin/tare", "tare binary")
	trials := flag.Int("trials", 5, "trials per variant")
	window := flag.Duration("window", 20*time.Second, "measured window per trial")
	effect := flag.Float64("effect", 5, "the change to detect, % of control-plane CPU")
	flag.Parse()
	if err := run(*tare, *trials, *window, *effect); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(tare string, trials int, window time.Duration, effect float64) error {
	dir, err := os.MkdirTemp("", "tare-bench-exp-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	spec := filepath.Join(dir, "aa.yaml")
	if err := os.WriteFile(spec, []byte(fmt.Sprintf(`name: a-a
target: {lab: {profile: upstream}}
trials: %d
warmup: 20s
window: %s
primary: control-plane-cpu
variants: [{name: a, baseline: true}, {name: a-again}]
`, trials, window)), 0o644); err != nil {
		return err
	}
	start := time.Now()
	cmd := exec.Command(tare, "experiment", spec, "--out", filepath.Join(dir, "out"), "-o", "json")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("tare experiment: %w", err)
	}
	took := time.Since(start)
	var r results
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		return err
	}
	byVariant := map[string][]float64{}
	for _, t := range r.Trials {
		if t.Status == "ok" {
			byVariant[t.Variant] = append(byVariant[t.Variant], t.Metrics["control-plane-cpu"])
		}
	}
	a, b := byVariant["a"], byVariant["a-again"]
	var ss float64
	for _, x := range [][]float64{a, b} {
		ss += stat.Variance(x, nil) * float64(len(x)-1)
	}
	sigma := math.Sqrt(ss / float64(len(a)+len(b)-2))
	base := stat.Mean(append(append([]float64{}, a...), b...), nil)
	delta := effect / 100 * base
	z := distuv.UnitNormal.Quantile(0.975) + distuv.UnitNormal.Quantile(0.8)
	// Trials per variant for the Mann–Whitney test (efficiency 3/π against the t-test), at least 4.
	n := max(4, int(math.Ceil(2*z*z*sigma*sigma/(delta*delta)/(3/math.Pi))))
	perTrial := took / time.Duration(len(r.Trials))
	measured := window.Minutes()
	mdeNow := z * sigma * math.Sqrt(2/float64(trials)) / math.Sqrt(3/math.Pi)
	fmt.Printf("A/A on the upstream lab: %d trials of %s (%s each with restart, guard and warm-up), %s in all\n",
		len(r.Trials), window, perTrial.Round(time.Second), took.Round(time.Second))
	for _, row := range r.Rows {
		if row.Metric == "control-plane-cpu" && len(row.Cells) == 2 && row.Cells[1].Shift != nil {
			verdict := "~ (no difference, as it should be)"
			if row.Cells[1].Shift.Significant {
				verdict = "significant: a false positive (expected in 5% of runs)"
			}
			fmt.Printf("control-plane CPU: a %.1fm, a-again %.1fm: %s, p=%.2f\n", row.Cells[0].Median.Median, row.Cells[1].Median.Median, verdict, row.Cells[1].Shift.P)
		}
	}
	fmt.Printf("noise between trials: σ = %.2fm (%.1f%% of %.1fm)\n", sigma, 100*sigma/base, base)
	fmt.Printf("this run could detect ±%.1f%% (%.1fm) with %d trials a side: %.1f minutes of measurement, %.1f minutes in all\n",
		100*mdeNow/base, mdeNow, trials, 2*float64(trials)*measured, took.Minutes())
	fmt.Printf("to detect %.0f%% (%.1fm) at 95%% confidence, 80%% power: %d trials a side = %.1f minutes of measurement, about %.0f minutes in all\n",
		effect, delta, n, 2*float64(n)*measured, 2*float64(n)*perTrial.Minutes())
	return nil
}
