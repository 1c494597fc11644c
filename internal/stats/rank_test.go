package stats

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// The exact p-value against its definition: enumerate every way of splitting the pooled values into
// groups of the two sizes and count the splits whose U is at least as far from its mean.
func TestMannWhitneyExactAgainstEnumeration(t *testing.T) {
	a := []float64{1.83, 0.50, 1.62, 2.48, 1.68, 1.88}
	b := []float64{0.878, 0.647, 0.598, 2.05, 1.06, 1.29, 3.14}
	s := MannWhitney(a, b, 0.05)
	pool := append(append([]float64{}, a...), b...)
	u := func(x, y []float64) float64 {
		var n float64
		for _, p := range x {
			for _, q := range y {
				if q > p {
					n++
				}
			}
		}
		return n
	}
	mid := float64(len(a)*len(b)) / 2
	obs := math.Abs(u(a, b) - mid)
	var extreme, total int
	count := make([]int, len(a)*len(b)+1) // how many splits have each U: the null distribution, counted
	for mask := 0; mask < 1<<len(pool); mask++ {
		var x, y []float64
		for i, v := range pool {
			if mask&(1<<i) != 0 {
				x = append(x, v)
			} else {
				y = append(y, v)
			}
		}
		if len(x) != len(a) {
			continue
		}
		total++
		count[int(u(x, y))]++
		if math.Abs(u(x, y)-mid) >= obs-1e-9 {
			extreme++
		}
	}
	want := float64(extreme) / float64(total)
	if !s.Exact || s.U != u(a, b) || math.Abs(s.P-want) > 1e-9 {
		t.Errorf("U %v p %.6f exact %v; enumeration says U %v p %.6f", s.U, s.P, s.Exact, u(a, b), want)
	}
	// The Hodges–Lehmann shift and its interval from their definitions (those of R's wilcox.test(b, a, conf.int =
	// TRUE)): the median of the 42 differences b - a is -0.575; the interval is the k-th smallest
	// to the k-th largest difference for the largest k whose two tails, P(U <= k-1) each by the counted null
	// distribution, hold at most 5% together: k = 7 (30 of the 1716 splits have U <= 6), so [-1.232, 0.790]
	// at 1 - 60/1716 = 96.5%.
	var diffs []float64
	for _, p := range a {
		for _, q := range b {
			diffs = append(diffs, q-p)
		}
	}
	slices.Sort(diffs)
	wantEst := (diffs[len(diffs)/2-1] + diffs[len(diffs)/2]) / 2
	k, below := 0, 0 // below: splits with U <= k-1
	for k+1 <= len(diffs)/2 && 2*float64(below+count[k]) <= 0.05*float64(total) {
		below += count[k]
		k++
	}
	wantLo, wantHi, wantLevel := diffs[k-1], diffs[len(diffs)-k], 1-2*float64(below)/float64(total)
	if math.Abs(s.Estimate-wantEst) > 1e-12 || s.Lo != wantLo || s.Hi != wantHi || math.Abs(s.Level-wantLevel) > 1e-12 {
		t.Errorf("shift %.3f [%.3f, %.3f] at %.4f; by definition %.3f [%.3f, %.3f] at %.4f (k = %d)",
			s.Estimate, s.Lo, s.Hi, s.Level, wantEst, wantLo, wantHi, wantLevel, k)
	}
	if math.Abs(wantEst-(-0.575)) > 1e-9 || k != 7 || math.Abs(wantLo-(-1.232)) > 1e-9 || math.Abs(wantHi-0.79) > 1e-9 {
		t.Errorf("the enumeration disagrees with the hand computation: %.3f [%.3f, %.3f], k = %d", wantEst, wantLo, wantHi, k)
	}
}

func TestMannWhitneySmallSamplesCannotBeSignificant(t *testing.T) {
	s := MannWhitney([]float64{1, 2, 3}, []float64{10, 11, 12}, 0.05)
	// Complete separation of 3 vs 3: the exact p is 2/20 = 0.1, the smallest there is.
	if math.Abs(s.P-0.1) > 1e-12 || math.Abs(s.MinP-0.1) > 1e-12 || s.Significant {
		t.Errorf("3 vs 3 separated: p %v min p %v", s.P, s.MinP)
	}
	if !math.IsInf(MDE(3, 3, 1, 0.05), 1) || math.IsInf(MDE(4, 4, 1, 0.05), 1) {
		t.Errorf("MDE: 3v3 must be infinite at 0.05, 4v4 finite")
	}
	s = MannWhitney([]float64{1, 2, 3, 4}, []float64{10, 11, 12, 13}, 0.05)
	if math.Abs(s.P-2.0/70) > 1e-12 || !s.Significant {
		t.Errorf("4 vs 4 separated: p %v, want 2/70", s.P)
	}
}

// By simulation: under the null the test rejects about alpha of the time; with a 2σ shift and 8 per
// side it rejects most of the time, and the HL interval covers the true shift at about its level.
func TestMannWhitneySimulation(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	const trials = 2000
	var falsePos, power, cover int
	draw := func(n int, mu float64) []float64 {
		x := make([]float64, n)
		for i := range x {
			x[i] = mu + rng.NormFloat64()
		}
		return x
	}
	for i := 0; i < trials; i++ {
		if MannWhitney(draw(8, 0), draw(8, 0), 0.05).Significant {
			falsePos++
		}
		s := MannWhitney(draw(8, 0), draw(8, 2), 0.05)
		if s.Significant {
			power++
		}
		if s.Lo <= 2 && 2 <= s.Hi {
			cover++
		}
	}
	if fp := float64(falsePos) / trials; fp > 0.065 {
		t.Errorf("false-positive rate %.3f at alpha 0.05", fp)
	}
	if pw := float64(power) / trials; pw < 0.9 {
		t.Errorf("power %.3f for a 2σ shift with 8 per side", pw)
	}
	if c := float64(cover) / trials; c < 0.93 {
		t.Errorf("95%% interval covered the true shift %.3f of the time", c)
	}
}

func TestMannWhitneyLargeUsesNormal(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	a, b := make([]float64, 40), make([]float64, 40)
	for i := range a {
		a[i], b[i] = rng.NormFloat64(), 1+rng.NormFloat64()
	}
	s := MannWhitney(a, b, 0.05)
	if s.Exact || !s.Significant || s.Lo > 1 || s.Hi < 1 {
		t.Errorf("40 vs 40, shift 1: %+v", s)
	}
}

func TestMedianCI(t *testing.T) {
	m := MedianCI([]float64{5, 1, 4, 2, 3}, 0.95)
	// n = 5 cannot reach 95%: [min, max] covers 1 - 2/32 = 93.75%.
	if m.Median != 3 || m.Lo != 1 || m.Hi != 5 || math.Abs(m.Level-0.9375) > 1e-12 {
		t.Errorf("n=5: %+v", m)
	}
	xs := make([]float64, 20)
	for i := range xs {
		xs[i] = float64(i + 1)
	}
	m = MedianCI(xs, 0.95)
	// n = 20: [x(6), x(15)] covers 1 - 2·P(Bin(20, ½) <= 5) = 1 - 2·(1+20+190+1140+4845+15504)/2^20 = 95.86%.
	if m.Median != 10.5 || m.Lo != 6 || m.Hi != 15 || math.Abs(m.Level-(1-2*21700.0/(1<<20))) > 1e-12 {
		t.Errorf("n=20: %+v", m)
	}
}

// TestMannWhitneyAllTied: when every value of both samples is the same, every split of the runs gives the
// same U, so the smallest p the test can reach is 1 (not 0, which a zero variance in the normal
// approximation gave), and the observed p is 1.
func TestMannWhitneyAllTied(t *testing.T) {
	t.Parallel()
	s := MannWhitney([]float64{8, 8, 8, 8, 8}, []float64{8, 8, 8, 8, 8}, 0.05)
	if s.MinP != 1 || s.P != 1 || s.Estimate != 0 {
		t.Errorf("all tied: min p %v, p %v, shift %v; want 1, 1, 0", s.MinP, s.P, s.Estimate)
	}
}
