package datapath

import (
	"iter"
	"math"

	"github.com/tare-dev/tare/internal/stats"
)

// This file holds the one comparison both verbs make: each lane's trials against its baseline lane's, on
// each figure, as a ratio with its interval and a p-value.

// Figure is one figure a trial (T: a net Trial, a DiskTrial) yields, and which way is better.
type Figure[T any] struct {
	Name         string // as in the JSON: gbps, p50_us, iops, …
	Title        string // as the text table heads its column: GBIT/S, P50 µs, IOPS, …
	Unit         string
	HigherBetter bool
	Value        func(T) float64
}

// ValuesOf is figure f of each trial, in order.
func ValuesOf[T any](ts []T, f Figure[T]) []float64 {
	out := make([]float64, 0, len(ts))
	for _, t := range ts {
		out = append(out, f.Value(t))
	}
	return out
}

// Shift compares one figure's trials with the baseline's: their medians and the ratio between them. Its
// fields appear inline in a Ratio's JSON.
type Shift struct {
	N      int     `json:"n"`
	NBase  int     `json:"n_baseline"`
	Median float64 `json:"median"`
	Base   float64 `json:"baseline_median"`
	// Ratio is the Hodges–Lehmann estimate of lane ÷ baseline (the median of all pairwise ratios), with its
	// distribution-free interval at Level, from the Mann–Whitney test on the logarithms.
	Ratio       float64 `json:"ratio"`
	Lo          float64 `json:"ratio_low"`
	Hi          float64 `json:"ratio_high"`
	Level       float64 `json:"ci_level"`
	P           float64 `json:"p_value"`
	Significant bool    `json:"significant"` // P < Alpha, this comparison alone: no correction for the run's many
	MinP        float64 `json:"min_p"`       // the smallest p these trial counts can give
}

// Alpha is the significance level of the comparisons.
const Alpha = 0.05

// LaneTrials groups the trials that key keeps by their key (a lane, or what a lane's trials are compared
// by), the keys in the order first seen.
func LaneTrials[T any, K comparable](trials []T, key func(T) (K, bool)) (order []K, by map[K][]T) {
	by = map[K][]T{}
	for _, t := range trials {
		k, ok := key(t)
		if !ok {
			continue
		}
		if _, seen := by[k]; !seen {
			order = append(order, k)
		}
		by[k] = append(by[k], t)
	}
	return order, by
}

// Shifts compares trials ts with the baseline's, base, on each of figures in turn (ShiftOf), leaving out a
// figure either side has no value of.
func Shifts[T any](figures []Figure[T], base, ts []T) iter.Seq2[Figure[T], Shift] {
	return func(yield func(Figure[T], Shift) bool) {
		for _, f := range figures {
			if s, ok := ShiftOf(ValuesOf(base, f), ValuesOf(ts, f)); ok && !yield(f, s) {
				return
			}
		}
	}
}

// ShiftOf compares values vs with the baseline's, base, on their logarithms: the Hodges–Lehmann ratio
// vs ÷ base with its interval and the Mann–Whitney p at Alpha. Values that are not positive and finite
// are left out; false when either side has none left.
func ShiftOf(base, vs []float64) (Shift, bool) {
	a, b := logs(base), logs(vs)
	if len(a) == 0 || len(b) == 0 {
		return Shift{}, false
	}
	s := stats.MannWhitney(a, b, Alpha)
	return Shift{N: len(b), NBase: len(a), Median: math.Exp(stats.MedianOf(b)), Base: math.Exp(stats.MedianOf(a)),
		Ratio: math.Exp(s.Estimate), Lo: math.Exp(s.Lo), Hi: math.Exp(s.Hi), Level: s.Level, P: s.P, Significant: s.Significant, MinP: s.MinP}, true
}

// logs are the positive values' logarithms: ratios become shifts, which the rank test handles.
func logs(vs []float64) []float64 {
	var out []float64
	for _, v := range vs {
		if v > 0 && !math.IsInf(v, 0) && !math.IsNaN(v) {
			out = append(out, math.Log(v))
		}
	}
	return out
}
