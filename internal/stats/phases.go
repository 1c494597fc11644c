package stats

import (
	"math"
)

// Estimate is a mean difference with its standard error, the standard deviation of one difference about
// its own phase's mean, and the residual degrees of freedom.
type Estimate struct {
	N    int     `json:"n"`
	Mean float64 `json:"mean"`
	SE   float64 `json:"se"`
	SD   float64 `json:"sd"`
	DF   int     `json:"df"`
}

// PhaseMean estimates the mean of differences that each carry an unknown fixed offset by phase (phase[i]
// in [0, phases)), the offsets summing to zero: a concurrent experiment's rounds rotate the variants over
// the labs, so a round's difference holds the labs' own offsets of its phase (round mod the number of
// variants), and those cancel only over whole rotations. The estimate is the mean of the phases' means,
// with the standard error from the differences' spread within their phases (n - phases degrees of
// freedom): the regression of the differences on sum-coded phase, whose intercept it is (statsmodels'
// OLS with C(phase, Sum) gives the same figures). With one phase (phase nil or phases <= 1) it is the
// plain mean with its standard error. Mean, SE and SD are NaN when a phase has no difference or no degree
// of freedom is left.
func PhaseMean(d []float64, phase []int, phases int) Estimate {
	e := Estimate{N: len(d), Mean: math.NaN(), SE: math.NaN(), SD: math.NaN()}
	if phases < 1 || phase == nil {
		phases = 1
	}
	sum := make([]float64, phases)
	n := make([]int, phases)
	of := func(i int) int {
		if phases == 1 {
			return 0
		}
		return ((phase[i] % phases) + phases) % phases
	}
	for i, x := range d {
		sum[of(i)] += x
		n[of(i)]++
	}
	e.DF = len(d) - phases
	for _, k := range n {
		if k == 0 {
			e.DF = 0
		}
	}
	if e.DF < 1 {
		e.DF = max(e.DF, 0)
		return e
	}
	mean := make([]float64, phases)
	var m, inv float64
	for p := range phases {
		mean[p] = sum[p] / float64(n[p])
		m += mean[p]
		inv += 1 / float64(n[p])
	}
	e.Mean = m / float64(phases)
	var ss float64
	for i, x := range d {
		r := x - mean[of(i)]
		ss += r * r
	}
	e.SD = math.Sqrt(ss / float64(e.DF))
	e.SE = e.SD * math.Sqrt(inv) / float64(phases)
	return e
}
