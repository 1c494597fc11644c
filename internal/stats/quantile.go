package stats

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// Quantile is a sample's p-quantile with its distribution-free confidence interval from order statistics
// (the binomial interval for a quantile): [x(l), x(u)] covers the true p-quantile with probability
// P(l ≤ B ≤ u−1), B ~ Binomial(n, p), whatever the distribution (for a continuous one; ties only widen it).
// l is the largest rank whose lower tail P(B ≤ l−1) stays within (1−level)/2, u the smallest whose upper
// tail P(B ≥ u) does. When n is too small for a side, that end is unbounded: Lo −Inf or Hi +Inf
// (NeedN says how many values would bound both).
type Quantile struct {
	N     int     `json:"n"`
	P     float64 `json:"p"`
	Value float64 `json:"value"` // the empirical p-quantile: x(⌈n·p⌉)
	Lo    float64 `json:"ci_low"`
	Hi    float64 `json:"ci_high"`
	// LoRank and HiRank are l and u (1-based ranks in the sorted sample), 0 and n+1 when unbounded.
	LoRank int     `json:"ci_low_rank"`
	HiRank int     `json:"ci_high_rank"`
	Level  float64 `json:"ci_level"` // the interval's exact coverage, at least the level asked when both ends are bounded
	NeedN  int     `json:"n_for_bounded_ci"`
}

// QuantileCI computes the p-quantile of xs (0 < p < 1) and its interval at level (0 < level < 1).
func QuantileCI(xs []float64, p, level float64) (Quantile, error) {
	if !(p > 0 && p < 1) {
		return Quantile{}, fmt.Errorf("quantile %v: want one above 0 and below 1", p)
	}
	if !(level > 0 && level < 1) {
		return Quantile{}, fmt.Errorf("level %v: want one above 0 and below 1", level)
	}
	n := len(xs)
	q := Quantile{N: n, P: p, Value: math.NaN(), Lo: math.Inf(-1), Hi: math.Inf(1), HiRank: n + 1, NeedN: QuantileN(p, level)}
	if n == 0 {
		return q, nil
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	q.Value = stat.Quantile(p, stat.Empirical, s, nil)
	tail := (1 - level) / 2
	bin := distuv.Binomial{N: float64(n), P: p}
	cdf := func(k int) float64 { // P(B ≤ k)
		if k < 0 {
			return 0
		}
		if k >= n {
			return 1
		}
		return bin.CDF(float64(k))
	}
	for l := n; l >= 1; l-- { // the largest l with P(B ≤ l−1) ≤ tail
		if cdf(l-1) <= tail {
			q.LoRank, q.Lo = l, s[l-1]
			break
		}
	}
	for u := 1; u <= n; u++ { // the smallest u with P(B ≥ u) = 1 − P(B ≤ u−1) ≤ tail
		if 1-cdf(u-1) <= tail {
			q.HiRank, q.Hi = u, s[u-1]
			break
		}
	}
	q.Level = cdf(q.HiRank-1) - cdf(q.LoRank-1)
	return q, nil
}

// QuantileN is the smallest sample whose p-quantile interval at level has both ends bounded: the upper
// one needs P(B = n) = pⁿ ≤ (1−level)/2, the lower one (1−p)ⁿ ≤ (1−level)/2.
func QuantileN(p, level float64) int {
	tail := math.Log((1 - level) / 2)
	return int(math.Ceil(max(tail/math.Log(p), tail/math.Log(1-p))))
}

// MarshalJSON writes an unbounded end (±Inf) and a missing value (NaN) as null: JSON has no infinity.
func (q Quantile) MarshalJSON() ([]byte, error) {
	type plain Quantile
	return json.Marshal(struct {
		plain
		Value *float64 `json:"value"`
		Lo    *float64 `json:"ci_low"`
		Hi    *float64 `json:"ci_high"`
	}{plain(q), finite(q.Value), finite(q.Lo), finite(q.Hi)})
}

// finite is &v, nil when v is NaN or infinite.
func finite(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

// UnmarshalJSON reads what MarshalJSON writes: a null value as NaN, a null end as unbounded.
func (q *Quantile) UnmarshalJSON(b []byte) error {
	type plain Quantile
	var v struct {
		plain
		Value *float64 `json:"value"`
		Lo    *float64 `json:"ci_low"`
		Hi    *float64 `json:"ci_high"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*q = Quantile(v.plain)
	q.Value, q.Lo, q.Hi = orElse(v.Value, math.NaN()), orElse(v.Lo, math.Inf(-1)), orElse(v.Hi, math.Inf(1))
	return nil
}

func orElse(v *float64, or float64) float64 {
	if v == nil {
		return or
	}
	return *v
}
