package experiment

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestParseErrors(t *testing.T) {
	base := "name: x\ntrials: 4\nwindow: 10s\n"
	for _, tc := range []struct{ name, yaml, want string }{
		{"unknown field", base + "variants: [{name: a}, {name: b}]\nwindw: 5s\n", `unknown field "windw"`},
		{"one trial", "name: x\ntrials: 1\nwindow: 10s\nvariants: [{name: a}, {name: b}]\n", "at least 2"},
		{"no window", "name: x\ntrials: 4\nvariants: [{name: a}, {name: b}]\n", "window"},
		{"one variant", base + "variants: [{name: a}]\n", "at least 2"},
		{"unknown component", base + "variants: [{name: a}, {name: b, set: [kube-dns.replicas=1]}]\n", "unknown component kube-dns"},
		{"no flag", base + "variants: [{name: a}, {name: b, set: [etcd=1]}]\n", "no .FLAG"},
		{"two baselines", base + "variants: [{name: a, baseline: true}, {name: b, baseline: true}]\n", "one is the baseline"},
		{"same name", base + "variants: [{name: a}, {name: a}]\n", "two variants are named"},
		{"bad scale", base + "variants: [{name: a}, {name: b, scale: [coredns=1]}]\n", "NAMESPACE/DEPLOYMENT=REPLICAS"},
		{"sweep and variants", base + "variants: [{name: a}, {name: b}]\nsweep: {flag: etcd.snapshot-count, values: [1, 2]}\n", "not both"},
		{"short sweep", base + "sweep: {flag: etcd.snapshot-count, values: [1]}\n", "at least 2 values"},
		{"unknown metric", base + "variants: [{name: a}, {name: b}]\nmetrics: [cpu]\n", `unknown metric "cpu"`},
		{"unknown primary", base + "variants: [{name: a}, {name: b}]\nprimary: foo-cpu\n", `unknown primary metric "foo-cpu"`},
		{"bad duration", "name: x\ntrials: 4\nwindow: soon\nvariants: [{name: a}, {name: b}]\n", "duration"},
		{"bad profile", base + "target: {lab: {profile: fast}}\nvariants: [{name: a}, {name: b}]\n", `unknown profile "fast"`},
		{"negative tolerance", base + "variants: [{name: a}, {name: b}]\nguard: {tolerance: -5%}\n", "want a positive percentage"},
		{"NaN tolerance", base + "variants: [{name: a}, {name: b}]\nguard: {tolerance: NaN%}\n", "finite percentage"},
		{"both targets", base + "target: {lab: {}, commands: {apply: 'true'}}\nvariants: [{name: a}, {name: b}]\n", "not both"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestParseSweepAndDefaults(t *testing.T) {
	s, err := Parse([]byte("name: snap\ntrials: 3\nwindow: 20s\nsweep: {flag: etcd.snapshot-count, values: [100000, \"500\"]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Variants) != 2 || !s.Variants[0].Baseline || s.Variants[1].Set[0] != "etcd.snapshot-count=500" || s.Variants[0].Name != "100000" {
		t.Errorf("sweep variants = %+v", s.Variants)
	}
	if s.Alpha != 0.05 || s.Interval.Duration != time.Second || s.Guard.Tolerance != 20 || s.Target.Lab == nil {
		t.Errorf("defaults: alpha %v interval %v tolerance %v lab %v", s.Alpha, s.Interval, s.Guard.Tolerance, s.Target.Lab)
	}
}

func TestPlanIsInterleavedAndSeeded(t *testing.T) {
	s, err := Parse([]byte("name: x\ntrials: 6\nwindow: 10s\nseed: 42\nvariants: [{name: a}, {name: b}, {name: c}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	p1, p2 := Plan(s), Plan(s)
	orders := map[string]bool{}
	for round := 0; round < 6; round++ {
		seen := map[string]bool{}
		var order string
		for _, tr := range p1[round*3 : round*3+3] {
			seen[tr.Variant] = true
			order += tr.Variant
			if tr.Round != round+1 {
				t.Errorf("trial %d in round %d, want %d", tr.Seq, tr.Round, round+1)
			}
		}
		if len(seen) != 3 {
			t.Errorf("round %d runs %s, want each variant once", round+1, order)
		}
		orders[order] = true
	}
	if len(orders) < 2 {
		t.Errorf("every round in the same order: not randomised")
	}
	for i := range p1 {
		if p1[i].Variant != p2[i].Variant || p1[i].Seq != p2[i].Seq {
			t.Fatalf("the same seed gave a different plan")
		}
	}
}

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
	s, err := Parse([]byte("name: x\ntrials: 5\nwindow: 10s\nvariants: [{name: le-on}, {name: le-off}, {name: slow}, {name: same}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	seq := 0
	var trials []Trial
	trials = append(trials, trialsOf("le-on", []float64{46, 47, 45, 48, 46.5}, 8, &seq)...)
	trials = append(trials, trialsOf("le-off", []float64{36, 35, 37, 36.5, 35.5}, 8.2, &seq)...)
	trials = append(trials, trialsOf("slow", []float64{30, 31, 29, 30.5, 29.5}, 15, &seq)...)
	trials = append(trials, trialsOf("same", []float64{46.2, 47.1, 44.9, 48.2, 46}, 8, &seq)...)
	r := Analyze(s, trials)
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
	s, err := Parse([]byte("name: x\ntrials: 3\nwindow: 10s\nvariants: [{name: a}, {name: b}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	var trials []Trial
	// Both variants alike, rising with time: drift, and 3 trials cannot be significant.
	for i := 0; i < 6; i++ {
		v := []string{"a", "b"}[i%2]
		trials = append(trials, Trial{Seq: i + 1, Variant: v, Status: "ok", Metrics: map[string]float64{"node-busy": 10 + 5*float64(i)}})
	}
	trials = append(trials, Trial{Seq: 7, Variant: "b", Status: "failed", Error: "etcd exited"})
	r := Analyze(s, trials)
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
