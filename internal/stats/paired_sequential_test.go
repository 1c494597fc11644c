package stats

import (
	"encoding/json"
	"math"
	"os"
	"slices"
	"testing"
)

// fixtures are the figures of independent implementations, captured by testdata/gen.py: scipy's wilcoxon,
// numpy's Walsh averages, gsDesign's recursive integration (its Python port) and scipy's t and normal.
type fixtures struct {
	SignedRank []struct {
		D      []float64 `json:"d"`
		Method string    `json:"method"`
		P      float64   `json:"p"`
		WPlus  float64   `json:"w_plus"`
		HL     float64   `json:"hl"`
	} `json:"signed_rank"`
	Sequential []struct {
		Fractions   []float64 `json:"fractions"`
		Alpha       float64   `json:"alpha"`
		Bounds      []float64 `json:"bounds"`
		FirstBound  float64   `json:"first_bound"`
		Power       float64   `json:"power_at_2_8"`
		Inflation80 float64   `json:"inflation_80"`
		Inflation90 float64   `json:"inflation_90"`
	} `json:"sequential"`
	Power []struct {
		EffectSD float64 `json:"effect_sd"`
		Alpha    float64 `json:"alpha"`
		Power    float64 `json:"power"`
		NInt     int     `json:"n_int"`
		MDESD    float64 `json:"mde_sd"`
	} `json:"power"`
	Binomial []struct {
		K, N   int
		Lo, Hi float64
	} `json:"binomial"`
	Looks []struct {
		D      []float64 `json:"d"`
		Bound  float64   `json:"bound"`
		Z      float64   `json:"z"`
		CILow  float64   `json:"ci_low"`
		CIHigh float64   `json:"ci_high"`
	} `json:"looks"`
}

func loadFixtures(t *testing.T) fixtures {
	t.Helper()
	b, err := os.ReadFile("testdata/paired_sequential.json")
	if err != nil {
		t.Fatal(err)
	}
	var f fixtures
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestSignedRankAgainstScipy(t *testing.T) {
	f := loadFixtures(t)
	if len(f.SignedRank) < 10 {
		t.Fatalf("%d cases, want at least 10", len(f.SignedRank))
	}
	for i, c := range f.SignedRank {
		s := SignedRank(c.D, 0.05)
		if s.Exact != (c.Method == "exact") {
			t.Errorf("case %d (n %d): exact %v, scipy's method %s", i, len(c.D), s.Exact, c.Method)
		}
		if math.Abs(s.P-c.P) > 1e-9*math.Max(1, c.P) || s.U != c.WPlus || math.Abs(s.Estimate-c.HL) > 1e-12 {
			t.Errorf("case %d (n %d, %s): W+ %v p %.10g HL %.6g; scipy W+ %v p %.10g, numpy HL %.6g",
				i, len(c.D), c.Method, s.U, s.P, s.Estimate, c.WPlus, c.P, c.HL)
		}
		if !(s.Lo <= s.Estimate && s.Estimate <= s.Hi) {
			t.Errorf("case %d: HL %v outside its interval [%v, %v]", i, s.Estimate, s.Lo, s.Hi)
		}
	}
}

// The interval of the signed-rank test against its definition on a small sample: enumerate the 2^n sign
// patterns to get the null distribution of W+, and take the k-th smallest and largest Walsh averages for the
// largest k whose two tails hold at most alpha together (R's wilcox.test(conf.int = TRUE)).
func TestSignedRankIntervalAgainstEnumeration(t *testing.T) {
	d := []float64{1.9, -0.4, 2.7, 0.8, 1.3, -1.1, 3.2, 0.5, 2.2, 1.6}
	s := SignedRank(d, 0.05)
	n := len(d)
	count := make([]int, n*(n+1)/2+1)
	for mask := 0; mask < 1<<n; mask++ {
		w := 0
		for r := 1; r <= n; r++ {
			if mask&(1<<(r-1)) != 0 {
				w += r
			}
		}
		count[w]++
	}
	var walsh []float64
	for i := range d {
		for j := i; j < n; j++ {
			walsh = append(walsh, (d[i]+d[j])/2)
		}
	}
	slices.Sort(walsh)
	total := 1 << n
	k, below := 0, 0
	for k+1 <= len(walsh)/2 && 2*float64(below+count[k]) <= 0.05*float64(total) {
		below += count[k]
		k++
	}
	if s.Lo != walsh[k-1] || s.Hi != walsh[len(walsh)-k] || math.Abs(s.Level-(1-2*float64(below)/float64(total))) > 1e-12 {
		t.Errorf("interval [%v, %v] at %.4f; by definition [%v, %v] at %.4f (k = %d)", s.Lo, s.Hi, s.Level,
			walsh[k-1], walsh[len(walsh)-k], 1-2*float64(below)/float64(total), k)
	}
}

func TestGroupSequentialAgainstGsDesign(t *testing.T) {
	f := loadFixtures(t)
	if len(f.Sequential) < 10 {
		t.Fatalf("%d designs, want at least 10", len(f.Sequential))
	}
	for i, c := range f.Sequential {
		g, err := NewGroupSequential(c.Fractions, c.Alpha)
		if err != nil {
			t.Fatalf("design %d: %v", i, err)
		}
		if math.Abs(g.Bounds[0]-c.FirstBound) > 1e-6 {
			t.Errorf("design %d: first bound %.7f, scipy's closed form %.7f", i, g.Bounds[0], c.FirstBound)
		}
		for k := 1; k < len(c.Bounds); k++ {
			if math.Abs(g.Bounds[k]-c.Bounds[k]) > 2e-4 {
				t.Errorf("design %d (%v, alpha %v) look %d: bound %.5f, gsDesign %.5f", i, c.Fractions, c.Alpha, k, g.Bounds[k], c.Bounds[k])
			}
		}
		if p := g.Power(2.8); math.Abs(p-c.Power) > 2e-4 {
			t.Errorf("design %d: power at drift 2.8 %.5f, gsDesign %.5f", i, p, c.Power)
		}
		for _, x := range []struct{ power, want float64 }{{0.8, c.Inflation80}, {0.9, c.Inflation90}} {
			if r := g.Inflation(x.power); math.Abs(r-x.want) > 1e-3 {
				t.Errorf("design %d: inflation at power %v %.5f, gsDesign %.5f", i, x.power, r, x.want)
			}
		}
	}
}

func TestLookAgainstScipy(t *testing.T) {
	f := loadFixtures(t)
	for i, c := range f.Looks {
		l := LookAt(c.D, 1, c.Bound)
		if math.Abs(l.Z-c.Z) > 1e-6*math.Max(1, math.Abs(c.Z)) || math.Abs(l.Lo-c.CILow) > 1e-9 || math.Abs(l.Hi-c.CIHigh) > 1e-9 {
			t.Errorf("look %d: z %.8g [%.8g, %.8g]; scipy z %.8g [%.8g, %.8g]", i, l.Z, l.Lo, l.Hi, c.Z, c.CILow, c.CIHigh)
		}
	}
}

func TestGroupSequentialBadDesigns(t *testing.T) {
	for _, c := range []struct {
		fr    []float64
		alpha float64
	}{{[]float64{0.5, 0.4}, 0.05}, {[]float64{0, 1}, 0.05}, {[]float64{0.5, 1.2}, 0.05}, {[]float64{1}, 0}, {[]float64{1}, 1}} {
		if _, err := NewGroupSequential(c.fr, c.alpha); err == nil {
			t.Errorf("%v at alpha %v: no error", c.fr, c.alpha)
		}
	}
}

// The pairs a paired t-test needs and the effect n pairs detect, against statsmodels' exact noncentral t:
// within one pair, and within 3% of the effect (the central-t formula is a little conservative at small n).
func TestPairedPowerAgainstStatsmodels(t *testing.T) {
	f := loadFixtures(t)
	if len(f.Power) < 10 {
		t.Fatalf("%d cases, want at least 10", len(f.Power))
	}
	for _, c := range f.Power {
		n := PairedRounds(c.EffectSD, 1, c.Alpha, c.Power, 1, 10000)
		if n < c.NInt-1 || n > c.NInt+1 {
			t.Errorf("effect %v sd at alpha %v power %v: %d pairs, statsmodels %d", c.EffectSD, c.Alpha, c.Power, n, c.NInt)
		}
		if m := PairedMDE(c.NInt, 1, c.Alpha, c.Power, 1); math.Abs(m-c.MDESD) > 0.03*c.MDESD {
			t.Errorf("%d pairs at alpha %v power %v: detect %.4f sd, statsmodels %.4f", c.NInt, c.Alpha, c.Power, m, c.MDESD)
		}
	}
	if n := PairedRounds(0.01, 1, 0.05, 0.8, 1, 100); n != 101 {
		t.Errorf("an effect 100 pairs cannot detect: %d, want the limit + 1", n)
	}
	if n := PairedRounds(0, 1, 0.05, 0.8, 1, 100); n != 0 {
		t.Errorf("no effect: %d pairs, want 0", n)
	}
	// Inflation multiplies the pairs: 5 looks of O'Brien–Fleming need about 2.5% more.
	g, _ := NewGroupSequential([]float64{0.2, 0.4, 0.6, 0.8, 1}, 0.05)
	fixed, seq := PairedRounds(0.2, 1, 0.05, 0.8, 1, 10000), PairedRounds(0.2, 1, 0.05, 0.8, g.Inflation(0.8), 10000)
	if seq <= fixed || float64(seq) > 1.04*float64(fixed)+1 {
		t.Errorf("sequential %d pairs against fixed %d at inflation %.4f", seq, fixed, g.Inflation(0.8))
	}
}

func TestBinomialCIAgainstScipy(t *testing.T) {
	f := loadFixtures(t)
	if len(f.Binomial) < 10 {
		t.Fatalf("%d cases, want at least 10", len(f.Binomial))
	}
	for _, c := range f.Binomial {
		lo, hi := BinomialCI(c.K, c.N, 0.95)
		if math.Abs(lo-c.Lo) > 1e-9 || math.Abs(hi-c.Hi) > 1e-9 {
			t.Errorf("%d of %d: [%.10f, %.10f], scipy [%.10f, %.10f]", c.K, c.N, lo, hi, c.Lo, c.Hi)
		}
	}
}
