package stats

import (
	"math"
	"slices"

	"gonum.org/v1/gonum/stat/distuv"
)

// Shift is the outcome of a Mann–Whitney U test of b against a (two-sided), the test benchstat uses: it
// assumes no distribution, only that a run's noise does not depend on the variant. With it come the
// Hodges–Lehmann estimate of the shift from a to b (the median of all pairwise differences) and its
// distribution-free confidence interval.
type Shift struct {
	NA, NB      int     `json:"-"`
	U           float64 `json:"u"`
	P           float64 `json:"p"`
	Exact       bool    `json:"exact"` // exact distribution of U (small samples without ties), else normal approximation
	Alpha       float64 `json:"alpha"`
	Significant bool    `json:"significant"`
	Estimate    float64 `json:"shift"`  // Hodges–Lehmann
	Lo          float64 `json:"ci_low"` // confidence interval of the shift
	Hi          float64 `json:"ci_high"`
	Level       float64 `json:"ci_level"` // achieved confidence of [Lo, Hi]; below the asked level when n is small
	MinP        float64 `json:"min_p"`    // the smallest p these sample sizes can give
}

// exactLimit: up to this many values in all, U's exact distribution is computed.
const exactLimit = 50

// MannWhitney tests b against a at alpha and gives the shift's interval at level 1-alpha (or the nearest
// level these sizes allow). It needs at least one value in each.
func MannWhitney(a, b []float64, alpha float64) Shift {
	s := Shift{NA: len(a), NB: len(b), Alpha: alpha, P: math.NaN(), Estimate: math.NaN(), Lo: math.NaN(), Hi: math.NaN(), MinP: math.NaN()}
	if len(a) == 0 || len(b) == 0 {
		return s
	}
	m, n := len(a), len(b)
	// U counts the pairs where b exceeds a (ties count a half).
	ties := false
	for _, x := range a {
		for _, y := range b {
			switch {
			case y > x:
				s.U++
			case y == x:
				s.U += 0.5
				ties = true
			}
		}
	}
	all := append(slices.Clone(a), b...)
	slices.Sort(all)
	for i := 1; i < len(all); i++ {
		ties = ties || all[i] == all[i-1]
	}
	diffs := make([]float64, 0, m*n)
	for _, x := range a {
		for _, y := range b {
			diffs = append(diffs, y-x)
		}
	}
	slices.Sort(diffs)
	s.Estimate = median(diffs)
	mn := float64(m * n)
	var k int // the interval is diffs[k-1] .. diffs[mn-k] (1-based k)
	if m+n <= exactLimit && !ties {
		s.Exact = true
		cdf := uCDF(m, n)
		lower := cdf[int(math.Floor(s.U))]
		upper := 1.0
		if u := int(math.Ceil(s.U)); u > 0 {
			upper = 1 - cdf[u-1]
		}
		s.P = math.Min(1, 2*math.Min(lower, upper))
		s.MinP = math.Min(1, 2*cdf[0])
		k = 1
		for k+1 <= m*n/2 && 2*cdf[k] <= alpha {
			k++
		}
		s.Level = 1 - 2*cdf[k-1]
	} else {
		mu := mn / 2
		sigma := math.Sqrt(mn * float64(m+n+1) / 12 * tieFactor(all))
		z := 0.0
		if sigma > 0 {
			z = (math.Abs(s.U-mu) - 0.5) / sigma
		}
		s.P = math.Min(1, 2*distuv.UnitNormal.CDF(-math.Max(z, 0)))
		s.MinP = 1 // every value tied: every split of the runs gives the same U, so no p below 1 is reachable
		if sigma > 0 {
			s.MinP = math.Min(1, 2*distuv.UnitNormal.CDF(-(mu-0.5)/sigma))
		}
		zc := distuv.UnitNormal.Quantile(1 - alpha/2)
		k = max(1, int(math.Floor(mu-zc*math.Sqrt(mn*float64(m+n+1)/12))))
		s.Level = 1 - alpha
	}
	s.Lo, s.Hi = diffs[k-1], diffs[len(diffs)-k]
	s.Significant = s.P < alpha
	return s
}

// uCDF is P(U <= u) for u = 0..m*n under the null, with no ties: the number of ways f(m, n, u) follows
// f(m, n, u) = f(m-1, n, u-n) + f(m, n-1, u).
func uCDF(m, n int) []float64 {
	// f[i][j] is the frequency table for sizes (i, j); built up row by row.
	prev := make([][]float64, n+1) // sizes (i-1, j)
	for j := 0; j <= n; j++ {
		prev[j] = []float64{1} // i = 0: U is 0 in exactly one way
	}
	for i := 1; i <= m; i++ {
		cur := make([][]float64, n+1)
		cur[0] = []float64{1}
		for j := 1; j <= n; j++ {
			f := make([]float64, i*j+1)
			for u := range f {
				if u-j >= 0 && u-j < len(prev[j]) {
					f[u] += prev[j][u-j]
				}
				if u < len(cur[j-1]) {
					f[u] += cur[j-1][u]
				}
			}
			cur[j] = f
		}
		prev = cur
	}
	f := prev[n]
	var total float64
	for _, c := range f {
		total += c
	}
	cdf := make([]float64, len(f))
	var acc float64
	for u, c := range f {
		acc += c
		cdf[u] = acc / total
	}
	return cdf
}

// tieFactor corrects U's variance for ties: 1 - Σ(t³-t)/(N³-N) over groups of t tied values.
func tieFactor(sorted []float64) float64 {
	n := float64(len(sorted))
	if n < 2 {
		return 1
	}
	return 1 - tieSum(sorted)/(n*n*n-n)
}

func median(sorted []float64) float64 {
	n := len(sorted)
	if n == 0 {
		return math.NaN()
	}
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

// MedianOf is the median of xs (NaN when empty); xs is left as it is.
func MedianOf(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return median(s)
}

// Robust returns the median of xs and its median absolute deviation scaled by 1.4826, which estimates
// the standard deviation of normal noise while one burst or outlier barely moves it.
func Robust(xs []float64) (med, mad float64) {
	med = MedianOf(xs)
	dev := make([]float64, len(xs))
	for i, x := range xs {
		dev[i] = math.Abs(x - med)
	}
	return med, 1.4826 * MedianOf(dev)
}

// Median is a sample's median with the distribution-free confidence interval from order statistics: the
// narrowest [x(k), x(n+1-k)] whose binomial coverage reaches level, or [min, max] and its coverage when n
// is too small to reach it.
type Median struct {
	N      int     `json:"n"`
	Median float64 `json:"median"`
	Lo     float64 `json:"ci_low"`
	Hi     float64 `json:"ci_high"`
	Level  float64 `json:"ci_level"`
}

// MedianCI computes the median of xs and its confidence interval.
func MedianCI(xs []float64, level float64) Median {
	s := slices.Clone(xs)
	slices.Sort(s)
	r := Median{N: len(s), Median: median(s), Lo: math.NaN(), Hi: math.NaN()}
	if len(s) == 0 {
		return r
	}
	n := len(s)
	bin := distuv.Binomial{N: float64(n), P: 0.5}
	// Coverage of [x(k), x(n+1-k)] is P(k <= B <= n-k) = 1 - 2 P(B <= k-1).
	k := 1
	for k+1 <= (n+1)/2 && 1-2*bin.CDF(float64(k)) >= level {
		k++
	}
	r.Lo, r.Hi = s[k-1], s[n-k]
	r.Level = 1 - 2*bin.CDF(float64(k-1))
	return r
}

// MDE is the smallest shift a comparison of na and nb runs with noise sigma (standard deviation of one
// run) detects with 80% power at alpha, for the Mann–Whitney test (whose efficiency against the t-test is
// 3/π for normal noise). It is +Inf when these sizes cannot reach alpha at all.
func MDE(na, nb int, sigma, alpha float64) float64 {
	if na < 1 || nb < 1 {
		return math.Inf(1)
	}
	if na+nb <= exactLimit && 2*uCDF(na, nb)[0] >= alpha {
		return math.Inf(1)
	}
	z := distuv.UnitNormal.Quantile(1-alpha/2) + distuv.UnitNormal.Quantile(0.8)
	return z * sigma * math.Sqrt(1/float64(na)+1/float64(nb)) / math.Sqrt(3/math.Pi)
}
