package stats

import (
	"slices"

	"gonum.org/v1/gonum/stat"
)

// Summary describes a series: n, mean, 95th percentile (empirical, as pidstat and benchstat users expect)
// and maximum.
type Summary struct {
	N    int     `json:"n"`
	Mean float64 `json:"mean"`
	P95  float64 `json:"p95"`
	Max  float64 `json:"max"`
}

// Describe summarises xs. The mean is the arithmetic mean of the values; callers that need a
// time-weighted mean compute it from totals.
func Describe(xs []float64) Summary {
	if len(xs) == 0 {
		return Summary{}
	}
	sorted := slices.Clone(xs)
	slices.Sort(sorted)
	return Summary{
		N:    len(xs),
		Mean: stat.Mean(xs, nil),
		P95:  stat.Quantile(0.95, stat.Empirical, sorted, nil),
		Max:  sorted[len(sorted)-1],
	}
}
