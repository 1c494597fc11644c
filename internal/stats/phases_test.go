package stats

import (
	"encoding/json"
	"math"
	"os"
	"testing"
)

// The phase estimate and its look against statsmodels' OLS of the differences on sum-coded phase (its
// intercept, standard error and residual degrees of freedom) and scipy's t and normal, captured by
// testdata/gen_phase.py: balanced and unbalanced phases, 2 to 5 of them, offsets from none to ten times
// the noise.
func TestPhaseMeanAgainstStatsmodels(t *testing.T) {
	b, err := os.ReadFile("testdata/phase_looks.json")
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Cases []struct {
			D            []float64 `json:"d"`
			Phase        []int     `json:"phase"`
			Phases       int       `json:"phases"`
			Bound        float64   `json:"bound"`
			Mean, SE, SD float64
			DF           int
			Z            float64 `json:"z"`
			CILow        float64 `json:"ci_low"`
			CIHigh       float64 `json:"ci_high"`
		} `json:"phase_looks"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	if len(f.Cases) < 10 {
		t.Fatalf("%d cases, want at least 10", len(f.Cases))
	}
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }
	for i, c := range f.Cases {
		e := PhaseMean(c.D, c.Phase, c.Phases)
		if !near(e.Mean, c.Mean) || !near(e.SE, c.SE) || !near(e.SD, c.SD) || e.DF != c.DF {
			t.Errorf("case %d: mean %.10g se %.10g sd %.10g df %d; statsmodels %.10g %.10g %.10g %d", i, e.Mean, e.SE, e.SD, e.DF, c.Mean, c.SE, c.SD, c.DF)
		}
		l := LookAtEstimate(e, 1, c.Bound)
		if math.Abs(l.Z-c.Z) > 1e-6*math.Max(1, math.Abs(c.Z)) || !near(l.Lo, c.CILow) || !near(l.Hi, c.CIHigh) {
			t.Errorf("case %d: z %.8g [%.8g, %.8g]; scipy z %.8g [%.8g, %.8g]", i, l.Z, l.Lo, l.Hi, c.Z, c.CILow, c.CIHigh)
		}
	}
}

// A phase without a difference, or no degree of freedom left, gives no estimate; one phase is the plain
// mean.
func TestPhaseMeanEdges(t *testing.T) {
	if e := PhaseMean([]float64{1, 2, 3}, []int{0, 0, 0}, 2); !math.IsNaN(e.Mean) || e.DF != 0 {
		t.Errorf("a phase empty: %+v, want no estimate", e)
	}
	if e := PhaseMean([]float64{1, 2}, []int{0, 1}, 2); !math.IsNaN(e.SE) || e.DF != 0 {
		t.Errorf("one difference a phase: %+v, want no estimate", e)
	}
	d := []float64{1, 4, 2, 7}
	e := PhaseMean(d, nil, 1)
	if !(e.Mean == 3.5 && e.DF == 3 && math.Abs(e.SD-math.Sqrt(7)) < 1e-12 && math.Abs(e.SE-math.Sqrt(7)/2) < 1e-12) {
		t.Errorf("one phase: %+v, want mean 3.5, sd √7, se √7/2, df 3", e)
	}
	if l := LookAtEstimate(PhaseMean(d[:1], nil, 1), 1, 2); !math.IsNaN(l.Z) {
		t.Errorf("one difference: z %v, want NaN", l.Z)
	}
}
