package density

import (
	"math"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/stat"
)

// Fit is a line fitted to cost against pod count: Fixed at zero pods plus Marginal per pod, with the 95%
// interval of Marginal, and R² of the line on the points.
type Fit struct {
	Fixed    float64 `json:"fixed"`
	Marginal float64 `json:"marginal"`
	Lo       float64 `json:"marginal_lo"` // 95% interval of Marginal (bootstrap over the points)
	Hi       float64 `json:"marginal_hi"`
	R2       float64 `json:"r2"`
	N        int     `json:"n"` // points fitted
}

// bootstrapRounds is how many resamples the interval of the slope is taken from.
const bootstrapRounds = 2000

// TheilSen fits y = a + b·x robustly: b is the median of the slopes of every pair of points with different
// x, a the median of y − b·x. The 95% interval of b is the 2.5th and 97.5th percentiles of b over bootstrap
// resamples of the points (resamples with a single x are redrawn). It needs two distinct x; with fewer
// every figure is NaN.
func TheilSen(xs, ys []float64, rng *rand.Rand) Fit {
	f := Fit{N: len(xs), Fixed: math.NaN(), Marginal: math.NaN(), Lo: math.NaN(), Hi: math.NaN(), R2: math.NaN()}
	b, ok := slope(xs, ys)
	if !ok {
		return f
	}
	f.Marginal = b
	f.Fixed = intercept(xs, ys, b)
	f.R2 = rSquared(xs, ys, f.Fixed, b)
	n := len(xs)
	bx, by := make([]float64, n), make([]float64, n)
	var boot []float64
	for tries := 0; len(boot) < bootstrapRounds && tries < 20*bootstrapRounds; tries++ {
		for i := range n {
			j := rng.IntN(n)
			bx[i], by[i] = xs[j], ys[j]
		}
		if s, ok := slope(bx, by); ok {
			boot = append(boot, s)
		}
	}
	if len(boot) > 0 {
		slices.Sort(boot)
		f.Lo = stat.Quantile(0.025, stat.Empirical, boot, nil)
		f.Hi = stat.Quantile(0.975, stat.Empirical, boot, nil)
	}
	return f
}

// slope is the median of pairwise slopes; false without two distinct x.
func slope(xs, ys []float64) (float64, bool) {
	var s []float64
	for i := range xs {
		for j := i + 1; j < len(xs); j++ {
			if xs[i] != xs[j] {
				s = append(s, (ys[j]-ys[i])/(xs[j]-xs[i]))
			}
		}
	}
	if len(s) == 0 {
		return 0, false
	}
	return median(s), true
}

func intercept(xs, ys []float64, b float64) float64 {
	r := make([]float64, len(xs))
	for i := range xs {
		r[i] = ys[i] - b*xs[i]
	}
	return median(r)
}

// rSquared is 1 − SSres/SStot of the line on the points; 1 when every y is equal and on the line.
func rSquared(xs, ys []float64, a, b float64) float64 {
	mean := stat.Mean(ys, nil)
	var res, tot float64
	for i := range xs {
		e := ys[i] - (a + b*xs[i])
		res += e * e
		d := ys[i] - mean
		tot += d * d
	}
	if tot == 0 {
		if res == 0 {
			return 1
		}
		return 0
	}
	return 1 - res/tot
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
