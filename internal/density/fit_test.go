package density

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestTheilSenByHand: slopes and intercepts worked out by hand.
func TestTheilSenByHand(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	// Pairwise slopes of (0,1) (1,3) (2,4) (3,10): 2, 1.5, 3, 1, 3.5, 6 → median (2+3)/2 = 2.5.
	// Residuals y − 2.5x: 1, 0.5, −1, 2.5 → median (0.5+1)/2 = 0.75.
	f := TheilSen([]float64{0, 1, 2, 3}, []float64{1, 3, 4, 10}, rng)
	if f.Marginal != 2.5 || f.Fixed != 0.75 || f.N != 4 {
		t.Errorf("fit %+v: want slope 2.5, intercept 0.75, n 4", f)
	}
	// Points on a line: the line, R² 1, a zero-width interval.
	f = TheilSen([]float64{0, 0, 10, 10, 20, 20}, []float64{5, 5, 25, 25, 45, 45}, rng)
	if f.Marginal != 2 || f.Fixed != 5 || f.R2 != 1 || f.Lo != 2 || f.Hi != 2 {
		t.Errorf("exact line: %+v, want 5 + 2x, R² 1, interval [2, 2]", f)
	}
	// A single x: no line.
	f = TheilSen([]float64{3, 3}, []float64{1, 2}, rng)
	if !math.IsNaN(f.Marginal) || !math.IsNaN(f.Lo) {
		t.Errorf("one x: %+v, want NaN", f)
	}
}

// TestTheilSenRobust: one wild point moves the least-squares slope a lot and Theil–Sen's little; on noisy
// points of a known line the 95% interval holds the true slope.
func TestTheilSenRobust(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	xs := []float64{0, 0, 0, 10, 10, 10, 20, 20, 20, 40, 40, 40}
	ys := make([]float64, len(xs))
	for i, x := range xs {
		ys[i] = 100 + 3*x + rng.NormFloat64()*4
	}
	ys[4] += 500 // a window disturbed by something else
	f := TheilSen(xs, ys, rng)
	if math.Abs(f.Marginal-3) > 0.5 || f.Lo > 3 || f.Hi < 3 {
		t.Errorf("fit %+v: want a slope near 3 with 3 in its interval", f)
	}
	covered := 0
	const runs = 200
	for range runs {
		for i, x := range xs {
			ys[i] = 100 + 3*x + rng.NormFloat64()*4
		}
		if f := TheilSen(xs, ys, rng); f.Lo <= 3 && 3 <= f.Hi {
			covered++
		}
	}
	// A bootstrap percentile interval of 12 points undercovers a little; far below 95% would be a bug.
	if covered < runs*85/100 {
		t.Errorf("the 95%% interval held the true slope in %d of %d runs", covered, runs)
	}
}
