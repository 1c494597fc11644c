package density

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/stat"

	"github.com/tare-dev/tare/internal/stats"
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
	if boot := bootstrap(xs, ys, rng, slope); len(boot) > 0 {
		f.Lo = stat.Quantile(0.025, stat.Empirical, boot, nil)
		f.Hi = stat.Quantile(0.975, stat.Empirical, boot, nil)
	}
	return f
}

// bootstrap returns est over bootstrapRounds resamples of the points, sorted (resamples est refuses, such
// as those with a single x, are redrawn, up to 20 times as many).
func bootstrap(xs, ys []float64, rng *rand.Rand, est func(xs, ys []float64) (float64, bool)) []float64 {
	n := len(xs)
	bx, by := make([]float64, n), make([]float64, n)
	var boot []float64
	for tries := 0; len(boot) < bootstrapRounds && tries < 20*bootstrapRounds; tries++ {
		for i := range n {
			j := rng.IntN(n)
			bx[i], by[i] = xs[j], ys[j]
		}
		if v, ok := est(bx, by); ok {
			boot = append(boot, v)
		}
	}
	slices.Sort(boot)
	return boot
}

// Predict is the Theil–Sen line's value at x, and the upper end of its 95% interval (the 97.5th percentile
// over bootstrap resamples of the points): the mean cost at x pods, and a bound it stays under. NaN
// without two distinct x.
func Predict(xs, ys []float64, x float64, rng *rand.Rand) (mid, hi float64) {
	at := func(xs, ys []float64) (float64, bool) {
		b, ok := slope(xs, ys)
		return intercept(xs, ys, b) + b*x, ok
	}
	mid, ok := at(xs, ys)
	if !ok {
		return math.NaN(), math.NaN()
	}
	boot := bootstrap(xs, ys, rng, at)
	if len(boot) == 0 {
		return mid, math.NaN()
	}
	return mid, stat.Quantile(0.975, stat.Empirical, boot, nil)
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
	return stats.MedianOf(s), true
}

func intercept(xs, ys []float64, b float64) float64 {
	r := make([]float64, len(xs))
	for i := range xs {
		r[i] = ys[i] - b*xs[i]
	}
	return stats.MedianOf(r)
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

// fitJSON and costJSON are Fit and Cost as JSON holds them: a figure that could not be fitted (NaN) is
// null, which JSON can hold.
type fitJSON struct {
	Fixed    *float64 `json:"fixed"`
	Marginal *float64 `json:"marginal"`
	Lo       *float64 `json:"marginal_lo"`
	Hi       *float64 `json:"marginal_hi"`
	R2       *float64 `json:"r2"`
	N        int      `json:"n"`
}

type costJSON struct {
	CPU     *float64 `json:"cpu_millicores"`
	RSS     *float64 `json:"rss_bytes"`
	PSS     *float64 `json:"pss_bytes"`
	Private *float64 `json:"private_bytes"`
}

// MarshalJSON writes NaN as null.
func (f Fit) MarshalJSON() ([]byte, error) {
	return json.Marshal(fitJSON{finite(f.Fixed), finite(f.Marginal), finite(f.Lo), finite(f.Hi), finite(f.R2), f.N})
}

// UnmarshalJSON reads null as NaN.
func (f *Fit) UnmarshalJSON(b []byte) error {
	var v fitJSON
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*f = Fit{Fixed: orNaN(v.Fixed), Marginal: orNaN(v.Marginal), Lo: orNaN(v.Lo), Hi: orNaN(v.Hi), R2: orNaN(v.R2), N: v.N}
	return nil
}

// MarshalJSON writes NaN as null.
func (c Cost) MarshalJSON() ([]byte, error) {
	return json.Marshal(costJSON{finite(c.CPU), finite(c.RSS), finite(c.PSS), finite(c.Private)})
}

// UnmarshalJSON reads null as NaN.
func (c *Cost) UnmarshalJSON(b []byte) error {
	var v costJSON
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*c = Cost{CPU: orNaN(v.CPU), RSS: orNaN(v.RSS), PSS: orNaN(v.PSS), Private: orNaN(v.Private)}
	return nil
}

func finite(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

func orNaN(v *float64) float64 {
	if v == nil {
		return math.NaN()
	}
	return *v
}
