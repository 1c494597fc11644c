package stats

import (
	"math"
	"slices"

	"gonum.org/v1/gonum/stat/distuv"
)

// SignedRank is the Wilcoxon signed-rank test of paired differences d (b - a of each pair, two-sided),
// the paired counterpart of MannWhitney: it assumes the differences are symmetric about their centre, not
// that they are normal. Pairs that did not differ are dropped (as R's wilcox.test and scipy's wilcoxon do
// by default). The statistic in U is W+, the sum of the ranks of the positive differences; the estimate is
// the Hodges–Lehmann one-sample estimate (the median of the Walsh averages (d_i + d_j)/2, i <= j) with its
// distribution-free interval. Below 51 differences and without ties the distribution of W+ is exact; else
// the normal approximation with the tie correction and a continuity correction (R's correct = TRUE).
func SignedRank(d []float64, alpha float64) Shift {
	s := Shift{NA: len(d), NB: len(d), Alpha: alpha, P: math.NaN(), Estimate: math.NaN(), Lo: math.NaN(), Hi: math.NaN(), MinP: math.NaN()}
	nz := make([]float64, 0, len(d))
	for _, x := range d {
		if x != 0 && !math.IsNaN(x) {
			nz = append(nz, x)
		}
	}
	n := len(nz)
	if n == 0 {
		return s
	}
	abs := make([]float64, n)
	for i, x := range nz {
		abs[i] = math.Abs(x)
	}
	ranks, ties := midranks(abs)
	for i, x := range nz {
		if x > 0 {
			s.U += ranks[i]
		}
	}
	walsh := make([]float64, 0, n*(n+1)/2)
	for i := range nz {
		for j := i; j < n; j++ {
			walsh = append(walsh, (nz[i]+nz[j])/2)
		}
	}
	slices.Sort(walsh)
	s.Estimate = median(walsh)
	total := float64(n * (n + 1) / 2)
	var k int // the interval is walsh[k-1] .. walsh[len-k] (1-based k)
	if n <= exactLimit && !ties {
		s.Exact = true
		cdf := wCDF(n)
		w := int(math.Round(s.U))
		lower := cdf[w]
		upper := 1.0
		if w > 0 {
			upper = 1 - cdf[w-1]
		}
		s.P = math.Min(1, 2*math.Min(lower, upper))
		s.MinP = math.Min(1, 2*cdf[0])
		k = 1
		for k+1 <= int(total)/2 && 2*cdf[k] <= alpha {
			k++
		}
		s.Level = 1 - 2*cdf[k-1]
	} else {
		mu := total / 2
		sigma := math.Sqrt(float64(n*(n+1)*(2*n+1))/24 - tieSum(abs)/48)
		z := 0.0
		if sigma > 0 {
			z = (math.Abs(s.U-mu) - 0.5) / sigma
		}
		s.P = math.Min(1, 2*distuv.UnitNormal.CDF(-math.Max(z, 0)))
		s.MinP = 1
		if sigma > 0 {
			s.MinP = math.Min(1, 2*distuv.UnitNormal.CDF(-(mu-0.5)/sigma))
		}
		zc := distuv.UnitNormal.Quantile(1 - alpha/2)
		k = max(1, int(math.Floor(mu-zc*math.Sqrt(float64(n*(n+1)*(2*n+1))/24))))
		s.Level = 1 - alpha
	}
	s.Lo, s.Hi = walsh[k-1], walsh[len(walsh)-k]
	s.Significant = s.P < alpha
	return s
}

// wCDF is P(W+ <= w) for w = 0..n(n+1)/2 under the null with no ties: each of the 2^n sign patterns is
// equally likely, and the number of subsets of {1..n} with sum w is counted one rank at a time.
func wCDF(n int) []float64 {
	top := n * (n + 1) / 2
	f := make([]float64, top+1)
	f[0] = 1
	for r := 1; r <= n; r++ {
		for w := top; w >= r; w-- {
			f[w] += f[w-r]
		}
	}
	cdf := make([]float64, top+1)
	all := math.Exp2(float64(n))
	var acc float64
	for w, c := range f {
		acc += c
		cdf[w] = acc / all
	}
	return cdf
}

// midranks ranks xs from 1 (ties share the mean of their ranks) and says whether there were ties.
func midranks(xs []float64) ([]float64, bool) {
	idx := make([]int, len(xs))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int {
		switch {
		case xs[a] < xs[b]:
			return -1
		case xs[a] > xs[b]:
			return 1
		}
		return 0
	})
	ranks := make([]float64, len(xs))
	ties := false
	for i := 0; i < len(idx); {
		j := i
		for j < len(idx) && xs[idx[j]] == xs[idx[i]] {
			j++
		}
		ties = ties || j-i > 1
		for m := i; m < j; m++ {
			ranks[idx[m]] = float64(i+j+1) / 2
		}
		i = j
	}
	return ranks, ties
}

// tieSum is Σ(t³ - t) over the groups of t tied values of xs.
func tieSum(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	var sum float64
	for i := 0; i < len(s); {
		j := i
		for j < len(s) && s[j] == s[i] {
			j++
		}
		t := float64(j - i)
		sum += t*t*t - t
		i = j
	}
	return sum
}
