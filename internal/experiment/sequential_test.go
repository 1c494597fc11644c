package experiment

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tare-dev/tare/internal/compare"
	"github.com/tare-dev/tare/internal/stats"
)

func seqSpec(t *testing.T, extra string) *Spec {
	t.Helper()
	s, err := Parse([]byte(`
name: seq
window: 10s
mde: 2%
target: {commands: {apply: "true"}}
variants: [{name: a}, {name: b, set: [kube-apiserver.v=2]}]
` + extra))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// pilot makes rounds of a and b with primary metric 100 + noise (sd), b shifted by shift.
func pilot(rounds int, sd, shift float64) []Trial {
	rng := rand.New(rand.NewPCG(5, 6))
	var out []Trial
	start := time.Unix(1e9, 0)
	for r := 1; r <= rounds; r++ {
		for _, v := range []string{"a", "b"} {
			x := 100 + rng.NormFloat64()*sd
			if v == "b" {
				x += shift
			}
			out = append(out, Trial{Seq: len(out) + 1, Round: r, Variant: v, Status: "ok", Started: start.Add(time.Duration(len(out)) * 30 * time.Second),
				Metrics: map[string]float64{"control-plane-cpu": x}})
		}
	}
	return out
}

func TestMakePlan(t *testing.T) {
	spec := seqSpec(t, "")
	trials := pilot(3, 1, 0)
	p, err := MakePlan(spec, trials, 3*time.Minute, "the first 3 rounds", true)
	if err != nil {
		t.Fatal(err)
	}
	_, diffs := compare.Pairs(trials, "a", "b", "control-plane-cpu")
	var m, ss float64
	for _, d := range diffs {
		m += d / 3
	}
	for _, d := range diffs {
		ss += (d - m) * (d - m)
	}
	sigma := math.Sqrt(ss / 2)
	want := stats.PairedRounds(0.02*p.Base, sigma, 0.05, 0.8, p.Inflation, 1000)
	if math.Abs(p.Sigma-sigma) > 1e-9 || p.MaxRounds != want || p.RoundSeconds != 60 || p.ReachablePct != 2 || p.FirstLook != 3 {
		t.Errorf("plan %+v; want sigma %v, %d rounds, 60 s a round", p, sigma, want)
	}
	if p.Inflation <= 1 || p.Inflation > 1.2 {
		t.Errorf("inflation %v for looks at every round", p.Inflation)
	}
	if txt := PlanText(p); !strings.Contains(txt, "±2.0%") || !strings.Contains(txt, "rounds") {
		t.Errorf("plan text %q", txt)
	}

	// A budget of 10 minutes at a minute a round, 3 spent: 10 rounds, which cannot reach 2% at this noise.
	spec = seqSpec(t, "budget: 10m\n")
	p, err = MakePlan(spec, pilot(3, 4, 0), 3*time.Minute, "the first 3 rounds", true)
	if err != nil {
		t.Fatal(err)
	}
	if p.MaxRounds != 10 || !(p.ReachablePct > 2) || !strings.Contains(PlanText(p), "cannot reach") {
		t.Errorf("budgeted plan %+v: %s", p, PlanText(p))
	}
	// Said once each, without contradiction: what ±2% needs (more rounds than the budget's), then what the
	// budget's 10 rounds reach.
	if txt := PlanText(p); p.NeedRounds <= 10 || !strings.Contains(txt, fmt.Sprintf("takes up to %d rounds", p.NeedRounds)) ||
		!strings.Contains(txt, "allows 10 rounds, about 10m0s") || strings.Count(txt, "rounds") != 3 {
		t.Errorf("budgeted plan text says %q; want ±2%%'s %d rounds, then the budget's 10", txt, p.NeedRounds)
	}
	// A budget of an hour, a minute a round, at little noise: the plan runs every round the budget allows
	// (fewer would detect 2%), and says what they detect.
	p, err = MakePlan(seqSpec(t, "budget: 1h\n"), pilot(3, 1, 0), 3*time.Minute, "the first 3 rounds", true)
	if err != nil {
		t.Fatal(err)
	}
	if p.MaxRounds != 60 || p.NeedRounds >= 60 || !(p.ReachablePct < 2) || !strings.Contains(PlanText(p), "allows 60 rounds") {
		t.Errorf("an ample budget: plan %+v: %s", p, PlanText(p))
	}
	// A budget the pilot has used up.
	if _, err := MakePlan(spec, trials, 10*time.Minute, "the first 3 rounds", true); err == nil || !strings.Contains(err.Error(), "budget") {
		t.Errorf("spent budget: %v", err)
	}
	// Noise no number of rounds beats.
	if _, err := MakePlan(seqSpec(t, ""), pilot(3, 60, 0), time.Minute, "x", true); err == nil || !strings.Contains(err.Error(), "too noisy") {
		t.Errorf("a noisy pilot: %v", err)
	}
	// One pair is not a noise.
	if _, err := MakePlan(seqSpec(t, ""), pilot(1, 1, 0), time.Minute, "x", true); err == nil || !strings.Contains(err.Error(), "at least 2") {
		t.Errorf("a one-round pilot: %v", err)
	}
}

func TestSequentialSpec(t *testing.T) {
	s := seqSpec(t, "")
	if s.PilotRounds != 3 || s.Trials != 3 || float64(s.MDE) != 2 {
		t.Errorf("defaults: pilot %d trials %d mde %v", s.PilotRounds, s.Trials, s.MDE)
	}
	for _, bad := range []string{
		"name: x\nwindow: 10s\ntrials: 3\nbudget: 5m\nvariants: [{name: a}, {name: b}]\n",
		"name: x\nwindow: 10s\nmde: 120%\nvariants: [{name: a}, {name: b}]\n",
		"name: x\nwindow: 10s\nmde: 2%\npilot_rounds: 1\nvariants: [{name: a}, {name: b}]\n",
		"name: x\nwindow: 10s\nmde: 2%\nsweep: {flag: etcd.snapshot-count, values: [1, 2]}\n",
	} {
		if _, err := Parse([]byte(bad)); err == nil {
			t.Errorf("accepted:\n%s", bad)
		}
	}
}

// A plan survives the experiment file: --resume reads it back, and the rounds it added are there.
func TestStoreKeepsPlan(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	spec := seqSpec(t, "seed: 7\n")
	st, trials, err := Create(ctx, dir, spec)
	if err != nil {
		t.Fatal(err)
	}
	p := compare.Plan{MDEPct: 2, Base: 100, Sigma: 1.5, MaxRounds: 8, FirstLook: 3, Inflation: 1.04, RoundSeconds: 60, Pilot: "test"}
	if trials, err = st.Adopt(ctx, p, trials); err != nil {
		t.Fatal(err)
	}
	if len(trials) != 16 || trials[15].Round != 8 || trials[15].Seq != 16 {
		t.Fatalf("%d trials after the plan, last %+v", len(trials), trials[len(trials)-1])
	}
	st.Close()
	st, again, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if st.Plan == nil || *st.Plan != p || len(again) != 16 {
		t.Errorf("reopened: plan %+v, %d trials", st.Plan, len(again))
	}
}

// PlanFromPilot plans from a real experiment captured on the lab (leader election on and off).
func TestPlanFromPilot(t *testing.T) {
	ctx := context.Background()
	dir := oldStoreDir(t)
	pf, err := PlanFromPilot(ctx, seqSpec(t, ""), dir)
	if err != nil {
		t.Fatal(err)
	}
	p := pf.Plan
	if !(p.Sigma > 0) || !(p.Base > 0) || p.MaxRounds < 3 || !(p.RoundSeconds > 0) || !strings.Contains(p.Pilot, dir) {
		t.Errorf("plan from the captured experiment: %+v", p)
	}
	t.Logf("%s", PlanText(p))
	if _, err := PlanFromPilot(ctx, seqSpec(t, ""), t.TempDir()); err == nil {
		t.Error("a pilot directory without an experiment: no error")
	}
}

// A concurrent experiment's plan takes the noise from every lab's value in every round with each lab's
// level removed: labs 10 apart (far more than a window's noise of 1) do not count as noise. Its pilot is
// 2 rounds by default; one round cannot show the noise.
func TestMakePlanConcurrent(t *testing.T) {
	const lab = "target: {lab: {replicas: 4, concurrent: true, control_plane_only: true}}\n"
	spec, err := Parse([]byte("name: c\nwindow: 10s\nmde: 2%\n" + lab + "variants: [{name: a}, {name: b}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if spec.PilotRounds != 2 {
		t.Errorf("default pilot %d rounds, want 2", spec.PilotRounds)
	}
	rng := rand.New(rand.NewPCG(8, 9))
	start := time.Unix(1e9, 0)
	var trials []Trial
	for r := 1; r <= 3; r++ {
		deal := dealLabs(spec.Seed, r, 4, 2)
		for vi, v := range []string{"a", "b"} {
			tr := Trial{Seq: len(trials) + 1, Round: r, Variant: v, Status: "ok", Started: start.Add(time.Duration(r) * time.Minute), Metrics: map[string]float64{}}
			for k, d := range deal {
				if d != vi {
					continue
				}
				x := 50 + 10*float64(k) + rng.NormFloat64()
				tr.Metrics["control-plane-cpu"] += x
				tr.Labs = append(tr.Labs, compare.LabMetrics{Lab: k + 1, Metrics: map[string]float64{"control-plane-cpu": x}})
			}
			trials = append(trials, tr)
		}
	}
	p, err := MakePlan(spec, trials, 3*time.Minute, "the first 3 rounds", true)
	if err != nil {
		t.Fatal(err)
	}
	// A share of 2 labs, each with noise 1: the sum's difference has noise about 2 a round.
	if p.Labs != 2 || !(p.Sigma > 0) || p.Sigma > 8 {
		t.Errorf("plan %+v: want 2 labs a share and a sigma near 2, the labs' levels (10 apart) left out", p)
	}
	if !strings.Contains(PlanText(p), "each lab's") {
		t.Errorf("plan text %q does not say each lab's level is removed", PlanText(p))
	}
	if _, err := MakePlan(spec, trials[:2], time.Minute, "x", true); err == nil || !strings.Contains(err.Error(), "at least 2") {
		t.Errorf("a 1-round pilot: %v", err)
	}
	plain := slices.Clone(trials)
	for i := range plain {
		plain[i].Labs = nil
	}
	if _, err := MakePlan(spec, plain, time.Minute, "x", true); err == nil || !strings.Contains(err.Error(), "each lab's value") {
		t.Errorf("a pilot without the labs' values: %v", err)
	}
}
