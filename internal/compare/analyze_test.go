package compare

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tare-dev/tare/internal/session"
	"github.com/tare-dev/tare/internal/warning"
)

func trialsOf(variant string, values []float64, guard float64, seq *int) []Trial {
	var out []Trial
	for _, v := range values {
		*seq++
		out = append(out, Trial{Seq: *seq, Variant: variant, Status: "ok",
			Metrics: map[string]float64{"control-plane-cpu": v, "node-busy": v + 20}, Guard: map[string]float64{GuardReady: guard}})
	}
	return out
}

func TestAnalyzeRecommendsAndGuards(t *testing.T) {
	t.Parallel()
	d := Design{Name: "x", Variants: []string{"le-on", "le-off", "slow", "same"}, Alpha: 0.05, Tolerance: 20}
	seq := 0
	var trials []Trial
	trials = append(trials, trialsOf("le-on", []float64{46, 47, 45, 48, 46.5}, 8, &seq)...)
	trials = append(trials, trialsOf("le-off", []float64{36, 35, 37, 36.5, 35.5}, 8.2, &seq)...)
	trials = append(trials, trialsOf("slow", []float64{30, 31, 29, 30.5, 29.5}, 15, &seq)...)
	trials = append(trials, trialsOf("same", []float64{46.2, 47.1, 44.9, 48.2, 46}, 8, &seq)...)
	r := Analyze(d, trials)
	v := map[string]Verdict{}
	for _, x := range r.Verdicts {
		v[x.Variant] = x
	}
	if !v["le-off"].Recommended || !strings.HasPrefix(v["le-off"].Summary, "recommended") {
		t.Errorf("le-off: %+v", v["le-off"])
	}
	// By hand: slow's guard is 15 s against le-on's 8 s, +87.5%. Five tied values on each side leave only the
	// normal approximation: tie factor 1 - 2·(5³-5)/(10³-10) = 0.7576, σ = √(25·11/12·0.7576) = 4.167,
	// z = (12.5 - 0.5)/4.167 = 2.880, p = 2·Φ(-2.880) = 0.004.
	wantGuard := []warning.Warning{{Code: WarnGuardWorse, Figure: "ready-seconds", Subject: "slow",
		Message: "ready-seconds 15s vs 8s at baseline (+88%, beyond the 20% tolerance; significant, p=0.004)"}}
	if v["slow"].Recommended || v["slow"].GuardOK || !cmp.Equal(v["slow"].Guard, wantGuard) {
		t.Errorf("slow (cuts CPU, worsens the guard 88%%): %+v", v["slow"])
	}
	// By hand, same against le-on: counting the pairs where same's value exceeds le-on's (a tie, 46 in both,
	// a half) gives U = 4 + 3.5 + 2 + 2 + 1 = 12.5 = 5·5/2, the null's centre, so p = 1. What this run could
	// detect (Noether: (z.975 + z.8)·σ·√(1/5 + 1/5) / √(3/π)) uses the pooled SD √((5 + 6.148)/8) = 1.1805
	// from the two sets of raw values: 2.8016·1.1805·0.6325/0.9772 = 2.140, 4.6% of le-on's median 46.5.
	if v["same"].Recommended || !strings.Contains(v["same"].Summary, "no significant change in control-plane-cpu (p=1.00; this run could detect ±4.6%)") {
		t.Errorf("same: %+v", v["same"])
	}
	// By hand, le-off against le-on: every le-off value is below every le-on value, which 2 of the C(10, 5) =
	// 252 splits are as extreme as, so p = 2/252. Hodges–Lehmann: the median of the 25 differences
	// le-off - le-on is 36 - 46.5 = -10.5, -22.6% of 46.5; the exact 5 vs 5 interval is the 3rd smallest to
	// the 3rd largest difference ([-12, -9]: P(U <= 2) = 4/252, and 2·7/252 > 5%), at 1 - 8/252 = 96.8%.
	row := r.Rows[0]
	c := row.Cells[1]
	if row.Metric != "control-plane-cpu" || c.Shift == nil || !c.Shift.Significant || math.Abs(c.Shift.P-2.0/252) > 1e-12 ||
		c.Shift.Estimate != -10.5 || c.Shift.Lo != -12 || c.Shift.Hi != -9 || math.Abs(c.Shift.Level-(1-8.0/252)) > 1e-12 ||
		math.Abs(float64(c.DeltaPct)-(-10.5/46.5*100)) > 1e-9 {
		t.Errorf("control-plane-cpu le-off cell = %+v, shift %+v; want p 2/252, shift -10.5 [-12, -9] at 96.8%%, -22.58%%", c, c.Shift)
	}
	// Noether again, with the pooled SD of le-on and le-off √((5 + 2.5)/8) = 0.9682: 2.8016·0.9682·0.6325/0.9772 = 1.7556.
	if math.Abs(float64(c.MDE)-1.7556) > 1e-3 {
		t.Errorf("5 vs 5 detectable effect %v, want 1.7556", c.MDE)
	}
	var table strings.Builder
	if err := r.Table(&table); err != nil {
		t.Fatal(err)
	}
	// The control-plane-cpu line, by the hand computations above (le-on's n = 5 interval is its min and max):
	// the baseline, le-off's significant change, and same's "~" with its p.
	var cpuLine string
	for _, line := range strings.Split(table.String(), "\n") {
		if strings.HasPrefix(line, "control-plane-cpu (m)") {
			cpuLine = line
		}
	}
	for _, want := range []string{"46.5 [45, 48] n=5", "-22.6% [-25.8%, -19.4%] p=0.008", "~ (p=1.00)"} {
		if !strings.Contains(cpuLine, want) {
			t.Errorf("the control-plane-cpu line lacks %q:\n%s", want, table.String())
		}
	}
	if !strings.Contains(table.String(), "guard: ready-seconds") {
		t.Errorf("table lacks the guard row:\n%s", table.String())
	}
}

func TestAnalyzeWarnsTooFewAndDrift(t *testing.T) {
	t.Parallel()
	d := Design{Name: "x", Variants: []string{"a", "b"}, Alpha: 0.05, Tolerance: 20}
	var trials []Trial
	// Both variants alike, rising with time: drift, and 3 trials cannot be significant.
	for i := 0; i < 6; i++ {
		v := []string{"a", "b"}[i%2]
		trials = append(trials, Trial{Seq: i + 1, Variant: v, Status: "ok", Metrics: map[string]float64{"node-busy": 10 + 5*float64(i)}})
	}
	trials = append(trials, Trial{Seq: 7, Variant: "b", Status: "failed", Error: "etcd exited"})
	r := Analyze(d, trials)
	// Each warning names the figure it qualifies and what the figure is of.
	for _, want := range []struct{ code, figure, subject, text string }{
		{WarnTooFewTrials, FigureP, "a", "a has 3 trial(s): with fewer than 4"},
		{WarnFailedTrial, FigureTrials, "b", "trial 7 (b) failed"},
		{WarnDrift, "node-busy", "", "drift: node-busy moved with time"},
	} {
		found := false
		for _, w := range r.Warnings {
			found = found || (w.Code == want.code && w.Figure == want.figure && w.Subject == want.subject && strings.Contains(w.Message, want.text))
		}
		if !found {
			t.Errorf("warnings lack %+v:\n%+v", want, r.Warnings)
		}
	}
	var js strings.Builder
	if err := r.JSON(&js); err != nil || !strings.Contains(js.String(), `"min_detectable": null`) {
		t.Errorf("JSON: %v\n%s", err, js.String())
	}
}

// TestTrialWarningsGrouped: a message repeated across trials is one line naming the first five.
func TestTrialWarningsGrouped(t *testing.T) {
	t.Parallel()
	var trials []Trial
	for i := 1; i <= 7; i++ {
		trials = append(trials, Trial{Seq: i, Warnings: []session.Warning{{Seq: 0, Kind: session.Source, Message: "no PSI"}}})
	}
	trials[2].Warnings = append(trials[2].Warnings, session.Warning{Seq: 9, Kind: session.Skipped, Message: "reading /proc/stat: gone"})
	got := trialWarnings(trials)
	first := "trial 1 sample 0, trial 2 sample 0, trial 3 sample 0, trial 4 sample 0, trial 5 sample 0 and 2 more"
	want := []warning.Warning{
		{Code: "window-source", Figure: FigureTrials, Subject: first, Message: "window warning in " + first + ": no PSI"},
		{Code: "window-skipped", Figure: FigureTrials, Subject: "trial 3 sample 9", Message: "window warning in trial 3 sample 9: reading /proc/stat: gone"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestConstantMetricHasNoDetectableChange: a metric that is the same in every trial has a pooled standard
// deviation of 0; what this run could detect is then not ±0% (any change at all) but undefined, and the
// verdict says why. Its drift check has nothing that moved with time.
func TestConstantMetricHasNoDetectableChange(t *testing.T) {
	t.Parallel()
	d := Design{Name: "x", Variants: []string{"a", "b"}, Alpha: 0.05, Tolerance: 20}
	var trials []Trial
	for i := 0; i < 10; i++ {
		trials = append(trials, Trial{Seq: i + 1, Variant: []string{"a", "b"}[i%2], Status: "ok",
			Metrics: map[string]float64{"control-plane-cpu": 7}})
	}
	r := Analyze(d, trials)
	c := r.Rows[0].Cells[1]
	if !math.IsNaN(float64(c.MDE)) || !math.IsNaN(float64(c.MDEPct)) || c.MDENote != "the metric did not vary in any trial" {
		t.Errorf("constant metric: MDE %v (%v%%), note %q; want NaN and why", c.MDE, c.MDEPct, c.MDENote)
	}
	want := "no significant change in control-plane-cpu (p=1.00; this run could detect n/a: the metric did not vary in any trial)"
	if got := r.Verdicts[1].Summary; got != want {
		t.Errorf("verdict %q, want %q", got, want)
	}
	if slices.ContainsFunc(r.Warnings, func(w warning.Warning) bool { return w.Code == WarnDrift }) {
		t.Errorf("a constant metric drifted: %+v", r.Warnings)
	}
	var js strings.Builder
	if err := r.JSON(&js); err != nil || !strings.Contains(js.String(), `"min_detectable": null,
          "min_detectable_percent": null,
          "min_detectable_note": "the metric did not vary in any trial"`) {
		t.Errorf("JSON: %v\n%s", err, js.String())
	}
}
