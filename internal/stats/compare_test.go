package stats

import (
	"math"
	"math/rand/v2"
	"testing"
)

// The first example of Wikipedia's "Welch's t-test" article: t = -2.46, df = 24.9 (24.99 unrounded), p = 0.021.
func TestWelchReference(t *testing.T) {
	a1 := []float64{27.5, 21.0, 19.0, 23.6, 17.0, 17.9, 16.9, 20.1, 21.9, 22.6, 23.1, 19.6, 19.0, 21.7, 21.4}
	a2 := []float64{27.1, 22.0, 20.8, 23.4, 23.4, 23.5, 25.8, 22.0, 24.8, 20.2, 21.9, 22.1, 22.9, 20.5, 24.4}
	d := Welch(a1, a2, 0.05)
	if math.Abs(d.DF-24.95) > 0.06 || math.Abs(d.P-0.021) > 0.001 || !d.Significant {
		t.Errorf("Welch = %+v, want df 24.9, p 0.021, significant", d)
	}
	if d := Welch([]float64{1, 1}, []float64{1, 1}, 0.05); d.P != 1 || d.Significant {
		t.Errorf("equal constants: %+v", d)
	}
	if d := Welch([]float64{1}, []float64{1, 2}, 0.05); !math.IsNaN(d.P) {
		t.Errorf("n = 1 cannot be tested: %+v", d)
	}
}

// Ground truth by simulation: the 95% interval covers the true mean about 95% of the time, and
// Welch's test calls samples from one distribution different about 5% of the time.
func TestCoverageAndFalsePositives(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const trials = 4000
	covered, falsePos := 0, 0
	sample := func(n int) []float64 {
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = 10 + 3*r.NormFloat64()
		}
		return xs
	}
	for range trials {
		iv := MeanCI(sample(8), 0.95)
		if math.Abs(iv.Mean-10) <= iv.Half {
			covered++
		}
		if Welch(sample(8), sample(12), 0.05).Significant {
			falsePos++
		}
	}
	if c := float64(covered) / trials; c < 0.935 || c > 0.965 {
		t.Errorf("95%% interval coverage = %.3f", c)
	}
	if f := float64(falsePos) / trials; f < 0.035 || f > 0.065 {
		t.Errorf("false positive rate at alpha 0.05 = %.3f", f)
	}
	if iv := MeanCI([]float64{5}, 0.95); iv.Mean != 5 || !math.IsNaN(iv.Half) {
		t.Errorf("n = 1: %+v", iv)
	}
}
