package compare

import (
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tare-dev/tare/internal/session"
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
	if v["slow"].Recommended || v["slow"].GuardOK || !strings.Contains(strings.Join(v["slow"].Guard, " "), "ready-seconds") {
		t.Errorf("slow (cuts CPU, worsens the guard 88%%): %+v", v["slow"])
	}
	if v["same"].Recommended || !strings.Contains(v["same"].Summary, "no significant change") {
		t.Errorf("same: %+v", v["same"])
	}
	row := r.Rows[0]
	if row.Metric != "control-plane-cpu" || row.Cells[1].Shift == nil || !row.Cells[1].Shift.Significant || math.Abs(float64(row.Cells[1].DeltaPct)-(-22)) > 3 {
		t.Errorf("control-plane-cpu row = %+v", row.Cells[1])
	}
	if math.IsInf(float64(row.Cells[1].MDE), 0) || row.Cells[1].MDE <= 0 {
		t.Errorf("5 vs 5 has a finite detectable effect, got %v", row.Cells[1].MDE)
	}
	var table strings.Builder
	if err := r.Table(&table); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table.String(), "~ (p=") || !strings.Contains(table.String(), "guard: ready-seconds") {
		t.Errorf("table lacks ~ or the guard row:\n%s", table.String())
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
	w := strings.Join(r.Warnings, "\n")
	for _, want := range []string{"a has 3 trial(s): with fewer than 4", "trial 7 (b) failed", "drift: node-busy moved with time"} {
		if !strings.Contains(w, want) {
			t.Errorf("warnings lack %q:\n%s", want, w)
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
	want := []string{
		"window warning in trial 1 sample 0, trial 2 sample 0, trial 3 sample 0, trial 4 sample 0, trial 5 sample 0 and 2 more: no PSI",
		"window warning in trial 3 sample 9: reading /proc/stat: gone",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
