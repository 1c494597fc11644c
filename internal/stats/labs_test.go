package stats

import (
	"encoding/json"
	"math"
	"os"
	"testing"
)

// The lab-level estimate against statsmodels' OLS of y ~ treated + C(lab) + C(round), captured by
// testdata/gen_labs.py: random halves and rotating shares, labs missing from rounds, a third variant's
// labs left out, 2 to 32 labs, levels from none to ten times the noise.
func TestLabEffectAgainstStatsmodels(t *testing.T) {
	b, err := os.ReadFile("testdata/lab_effects.json")
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Cases []struct {
			Obs []struct {
				Lab     int     `json:"lab"`
				Round   int     `json:"round"`
				Treated bool    `json:"treated"`
				Y       float64 `json:"y"`
			} `json:"obs"`
			Mean, SE float64
			DF       int
			Rounds   int
		} `json:"lab_effects"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	if len(f.Cases) < 10 {
		t.Fatalf("%d cases, want at least 10", len(f.Cases))
	}
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-8*math.Max(1, math.Abs(b)) }
	for i, c := range f.Cases {
		obs := make([]LabObs, len(c.Obs))
		for j, o := range c.Obs {
			obs[j] = LabObs{Lab: o.Lab, Round: o.Round, Treated: o.Treated, Y: o.Y}
		}
		e := LabEffect(obs)
		if !near(e.Mean, c.Mean) || !near(e.SE, c.SE) || e.DF != c.DF || e.N != c.Rounds || !near(e.SD, c.SE*math.Sqrt(float64(c.Rounds))) {
			t.Errorf("case %d: effect %.10g se %.10g df %d rounds %d; statsmodels %.10g %.10g %d %d", i, e.Mean, e.SE, e.DF, e.N, c.Mean, c.SE, c.DF, c.Rounds)
		}
	}
}

// No lab ran both sides, or no degree of freedom is left: no estimate.
func TestLabEffectEdges(t *testing.T) {
	if e := LabEffect(nil); !math.IsNaN(e.Mean) || e.DF != 0 {
		t.Errorf("nothing: %+v", e)
	}
	one := []LabObs{{1, 1, false, 3}, {2, 1, true, 5}, {3, 1, false, 4}, {4, 1, true, 6}}
	if e := LabEffect(one); !math.IsNaN(e.Mean) || e.DF != 0 {
		t.Errorf("one round (each lab on one side only): %+v, want no estimate", e)
	}
	two := append(one, LabObs{1, 2, true, 5}, LabObs{2, 2, false, 3}, LabObs{3, 2, true, 6}, LabObs{4, 2, false, 4})
	e := LabEffect(two)
	if e.DF != 2 || e.N != 2 || math.Abs(e.Mean-2) > 1e-12 {
		t.Errorf("two rounds of four labs, each +2 on the variant: %+v, want effect 2 with 8-4-1-1 = 2 df", e)
	}
}

// RoundsMDE takes the t's degrees of freedom apart from the rounds (12 cases against scipy); with df = n - 1
// it is PairedMDE.
func TestRoundsMDE(t *testing.T) {
	// scipy 1.17.1: (t.ppf(1 - alpha/2, df) + t.ppf(power, df)) * sigma / sqrt(n / inflation)
	for _, c := range []struct {
		n, df                          int
		sigma, alpha, power, inflation float64
		want                           float64
	}{
		{4, 14, 2, 0.05, 0.8, 1.1, 3.1598947913195774},
		{4, 3, 2, 0.05, 0.8, 1.1, 4.364008262704102},
		{2, 1, 1, 0.05, 0.8, 1, 9.957892521561483},
		{3, 29, 5.5, 0.05, 0.8, 1, 9.206900215856358},
		{5, 60, 1.3, 0.05, 0.9, 1.21, 2.107918943715713},
		{8, 105, 0.7, 0.01, 0.8, 1.05, 0.8796143841978976},
		{2, 14, 3, 0.1, 0.8, 1, 5.57772528977905},
		{10, 9, 2, 0.05, 0.8, 1, 1.9894274700193468},
		{6, 75, 4.2, 0.05, 0.95, 1.3, 7.150442930155873},
		{1, 1, 1, 0.05, 0.8, 1, 14.082586656645868},
		{12, 341, 0.9, 0.05, 0.8, 1.1, 0.7655896954221826},
		{3, 2, 10, 0.2, 0.5, 1, 10.88662107903635},
	} {
		got := RoundsMDE(c.n, c.df, c.sigma, c.alpha, c.power, c.inflation)
		if math.Abs(got-c.want) > 1e-9*c.want {
			t.Errorf("%+v: %.12g, scipy %.12g", c, got, c.want)
		}
	}
	if RoundsMDE(4, 3, 2, 0.05, 0.8, 1.1) != PairedMDE(4, 2, 0.05, 0.8, 1.1) || !math.IsInf(RoundsMDE(4, 0, 1, 0.05, 0.8, 1), 1) {
		t.Error("RoundsMDE at n - 1 degrees of freedom is not PairedMDE, or no degree of freedom is not +Inf")
	}
}
