package compare

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/tare-dev/tare/internal/stats"
)

// pairedTrials makes rounds of two variants, a and b, whose primary metric is base plus normal noise
// (sd each), b shifted by shift; fails lists rounds whose b trial failed.
func pairedTrials(rng *rand.Rand, rounds int, base, shift, sd float64, fails ...int) []Trial {
	failed := map[int]bool{}
	for _, r := range fails {
		failed[r] = true
	}
	var out []Trial
	for r := 1; r <= rounds; r++ {
		common := rng.NormFloat64() * sd // what the round's time does to both
		for _, v := range []string{"a", "b"} {
			x := base + common + rng.NormFloat64()*sd
			st := "ok"
			if v == "b" {
				x += shift
				if failed[r] {
					st = "failed"
				}
			}
			out = append(out, Trial{Seq: len(out) + 1, Round: r, Variant: v, Status: st, Metrics: map[string]float64{"control-plane-cpu": x}})
		}
	}
	return out
}

func TestPairsByRound(t *testing.T) {
	trials := pairedTrials(rand.New(rand.NewPCG(1, 2)), 5, 100, 3, 1, 2, 4)
	rounds, diffs := Pairs(trials, "a", "b", "control-plane-cpu")
	if len(rounds) != 3 || rounds[0] != 1 || rounds[1] != 3 || rounds[2] != 5 {
		t.Fatalf("rounds %v, want 1 3 5 (2 and 4 failed)", rounds)
	}
	for i, r := range rounds {
		a, b := trials[2*(r-1)].Metrics["control-plane-cpu"], trials[2*(r-1)+1].Metrics["control-plane-cpu"]
		if diffs[i] != b-a {
			t.Errorf("round %d: difference %v, want %v", r, diffs[i], b-a)
		}
	}
}

// sized gives p the rounds that detect its MDEPct at its Sigma with looks at every round from FirstLook,
// settling the rounds and the looks' inflation.
func sized(p Plan, alpha float64) Plan {
	for range 3 {
		n := stats.PairedRounds(p.MDEPct/100*p.Base, p.Sigma, alpha, Power, p.Inflation, 1000)
		p.MaxRounds = n
		var fr []float64
		for r := p.FirstLook; r <= n; r++ {
			fr = append(fr, float64(r)/float64(n))
		}
		g, _ := stats.CachedGroupSequential(fr, alpha)
		p.Inflation = g.Inflation(Power)
	}
	return p
}

// The whole sequential procedure, simulated where the truth is known: with no difference (A/A) it
// reports a change in at most alpha of the experiments, however many looks; with the planned effect it
// finds it (right sign) in about 80% of them, and its repeated interval holds the truth at least 1 - alpha
// of the time. The plan's rounds come from PairedRounds at the simulated noise.
func TestSequentialSimulated(t *testing.T) {
	if testing.Short() {
		t.Skip("a Monte Carlo of 2,000 experiments")
	}
	const base, sd, alpha, mdePct = 100.0, 3.0, 0.05, 2.0
	sigmaD := sd * math.Sqrt(2) // the round's common part cancels in a pair
	p := sized(Plan{MDEPct: mdePct, Base: base, Sigma: sigmaD, FirstLook: 3, Inflation: 1}, alpha)
	rng := rand.New(rand.NewPCG(20261124, 7))
	const runs = 1000
	var aaFalse, hits, covered, early int
	for range runs {
		s := SequentialFor(p, pairedTrials(rng, p.MaxRounds, base, 0, sd), "a", "b", "control-plane-cpu", alpha)
		if s.Decision == Changed {
			aaFalse++
		}
		s = SequentialFor(p, pairedTrials(rng, p.MaxRounds, base, mdePct/100*base, sd), "a", "b", "control-plane-cpu", alpha)
		if s.Decision == Changed && s.Mean > 0 {
			hits++
			if s.At < p.MaxRounds {
				early++
			}
		}
		if float64(s.Lo) <= mdePct/100*base && mdePct/100*base <= float64(s.Hi) {
			covered++
		}
	}
	// Binomial margins: 3 standard errors of the rates at these counts.
	se := func(q float64) float64 { return 3 * math.Sqrt(q*(1-q)/runs) }
	t.Logf("plan %d rounds (inflation %.3f); A/A false positives %d/%d; planted effect found %d/%d (%d early); interval held it %d/%d",
		p.MaxRounds, p.Inflation, aaFalse, runs, hits, runs, early, covered, runs)
	if rate := float64(aaFalse) / runs; rate > alpha+se(alpha) {
		t.Errorf("A/A: %.3f significant, want at most %.2f", rate, alpha)
	}
	// The plan's central-t figures are a little conservative: a little more power is no fault.
	if rate := float64(hits) / runs; rate < Power-se(Power)-0.02 || rate > Power+se(Power)+0.06 {
		t.Errorf("planted effect found in %.3f, want about %.2f", rate, Power)
	}
	if rate := float64(covered) / runs; rate < 1-alpha-se(1-alpha) {
		t.Errorf("repeated interval held the effect in %.3f, want at least %.2f", rate, 1-alpha)
	}
}

func TestSequentialDecisions(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	p := Plan{MDEPct: 2, Base: 100, Sigma: 1.4, MaxRounds: 20, FirstLook: 3, Inflation: 1.03}
	// A change many times the noise: clear early, at the round of the last look taken.
	s := SequentialFor(p, pairedTrials(rng, 20, 100, -15, 1), "a", "b", "control-plane-cpu", 0.05)
	if s.Decision != Changed || s.At >= 10 || s.Mean > 0 || len(s.Looks) == 0 || s.Looks[len(s.Looks)-1].Round != s.At {
		t.Errorf("a large drop: %s at round %d, mean %v, %d looks", s.Decision, s.At, s.Mean, len(s.Looks))
	}
	// No change and little noise: the repeated interval soon lies within ±2.
	s = SequentialFor(p, pairedTrials(rng, 20, 100, 0, 0.05), "a", "b", "control-plane-cpu", 0.05)
	if s.Decision != NoChange || s.At == 0 {
		t.Errorf("no change, little noise: %s at round %d [%v, %v]", s.Decision, s.At, s.Lo, s.Hi)
	}
	// Two rounds are not yet a look.
	s = SequentialFor(p, pairedTrials(rng, 2, 100, 5, 1), "a", "b", "control-plane-cpu", 0.05)
	if s.Decision != Undecided || len(s.Looks) != 0 {
		t.Errorf("two rounds: %s with %d looks", s.Decision, len(s.Looks))
	}
	// Through Analyze, the verdict rests on the sequential answer.
	r := Analyze(Design{Name: "x", Variants: []string{"a", "b"}, Alpha: 0.05, Plan: &p}, pairedTrials(rng, 20, 100, -15, 1))
	if len(r.Sequential) != 1 || !r.Verdicts[1].Recommended || r.Plan == nil {
		t.Errorf("analyze: %d sequential answers, verdict %+v", len(r.Sequential), r.Verdicts[1])
	}
}

// labTrials are the trials of a concurrent experiment of 2·share labs: lab k has its own level (levels,
// one per lab), each round a level of its own (what the machine does to every lab) and each lab's window
// its noise sd; every round deals the labs to a and b at random, share each, and b adds shift to each of
// its labs. A trial's metric is its share's sum, with each lab's value in Labs.
func labTrials(rng *rand.Rand, rounds, share int, levels []float64, shift, sd float64) []Trial {
	var out []Trial
	for r := 1; r <= rounds; r++ {
		common := rng.NormFloat64() * sd
		perm := rng.Perm(2 * share)
		for vi, v := range []string{"a", "b"} {
			t := Trial{Seq: len(out) + 1, Round: r, Variant: v, Status: "ok", Metrics: map[string]float64{}}
			for _, k := range perm[vi*share : (vi+1)*share] {
				x := levels[k] + common + rng.NormFloat64()*sd
				if v == "b" {
					x += shift
				}
				t.Metrics["control-plane-cpu"] += x
				t.Labs = append(t.Labs, LabMetrics{Lab: k + 1, Metrics: map[string]float64{"control-plane-cpu": x}})
			}
			out = append(out, t)
		}
	}
	return out
}

// The lab-level estimate, simulated where the truth is known: 16 labs whose own levels differ by four
// times a window's noise, dealt to the variants at random every round. With Labs 8 the plan holds (A/A at
// alpha, the planted 2% found about 80% of the time, the interval holding it); the plain paired mean of
// the shares' sums, whose noise the labs' levels swell, finds it far less often.
func TestSequentialLabsSimulated(t *testing.T) {
	if testing.Short() {
		t.Skip("a Monte Carlo of 3,000 experiments")
	}
	const share, sd, alpha, mdePct = 8, 1.0, 0.05, 2.0
	rng := rand.New(rand.NewPCG(20261127, 9))
	levels := make([]float64, 2*share)
	for k := range levels {
		levels[k] = 30 + 4*sd*rng.NormFloat64()
	}
	base := 0.0
	for _, l := range levels {
		base += l / 2
	}
	// The plan's sigma as a pilot would see it: the lab-level estimate's one-round noise, from many rounds.
	probe := Plan{Labs: share}
	sigma := probe.Estimate(labTrials(rng, 400, share, levels, 0, sd), "a", "b", "control-plane-cpu").SD
	p := sized(Plan{MDEPct: mdePct, Base: base, Sigma: sigma, FirstLook: 2, Inflation: 1, Labs: share}, alpha)
	plain := p
	plain.Labs = 0
	shift := mdePct / 100 * base / share // per lab: the share's sum moves by 2% of base
	const runs = 1000
	var aaFalse, hits, covered, plainHits int
	for range runs {
		s := SequentialFor(p, labTrials(rng, p.MaxRounds, share, levels, 0, sd), "a", "b", "control-plane-cpu", alpha)
		if s.Decision == Changed {
			aaFalse++
		}
		planted := labTrials(rng, p.MaxRounds, share, levels, shift, sd)
		s = SequentialFor(p, planted, "a", "b", "control-plane-cpu", alpha)
		if s.Decision == Changed && s.Mean > 0 {
			hits++
		}
		if float64(s.Lo) <= mdePct/100*base && mdePct/100*base <= float64(s.Hi) {
			covered++
		}
		if s := SequentialFor(plain, planted, "a", "b", "control-plane-cpu", alpha); s.Decision == Changed && s.Mean > 0 {
			plainHits++
		}
	}
	se := func(q float64) float64 { return 3 * math.Sqrt(q*(1-q)/runs) }
	t.Logf("plan %d rounds (sigma %.3f of base %.1f); A/A false positives %d/%d; planted found %d/%d (plain paired mean %d/%d); interval held it %d/%d",
		p.MaxRounds, sigma, base, aaFalse, runs, hits, runs, plainHits, runs, covered, runs)
	if rate := float64(aaFalse) / runs; rate > alpha+se(alpha) {
		t.Errorf("A/A: %.3f significant, want at most %.2f", rate, alpha)
	}
	if rate := float64(hits) / runs; rate < Power-se(Power)-0.03 {
		t.Errorf("planted effect found in %.3f, want about %.2f", rate, Power)
	}
	if rate := float64(covered) / runs; rate < 1-alpha-se(1-alpha) {
		t.Errorf("repeated interval held the effect in %.3f, want at least %.2f", rate, 1-alpha)
	}
	if plainHits*2 >= hits {
		t.Errorf("the plain paired mean found the effect %d times, the lab-level estimate %d: the labs' levels should cost it most of its power", plainHits, hits)
	}
	if s := SequentialFor(p, labTrials(rng, 4, share, levels, 0, sd), "a", "b", "control-plane-cpu", alpha); !strings.Contains(s.Method, "fixed effects") {
		t.Errorf("method %q does not say each lab's level was removed", s.Method)
	}
}
