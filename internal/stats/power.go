package stats

import (
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// Power of a paired comparison: n pairs whose differences have standard deviation sigma, tested on their
// mean (the t-test, two-sided at alpha) inside a group-sequential design that needs inflation times the
// fixed test's pairs (GroupSequential.Inflation; 1 for a single look). The figures use the central t
// quantiles, (t(1-alpha/2, n-1) + t(power, n-1))·sigma/√(n/inflation), which is within a pair of the exact
// noncentral-t answer (checked against statsmodels' TTestPower).

// PairedMDE is the smallest true mean difference n pairs detect with the given power; +Inf below 2 pairs.
func PairedMDE(n int, sigma, alpha, power, inflation float64) float64 {
	return RoundsMDE(n, n-1, sigma, alpha, power, inflation)
}

// RoundsMDE is PairedMDE for an estimate whose noise is seen with df degrees of freedom rather than n - 1: n
// rounds of sigma each, the t's quantiles at df (the lab-level estimate sees many labs a round, LabEffect).
// +Inf when n or df is below 1.
func RoundsMDE(n, df int, sigma, alpha, power, inflation float64) float64 {
	if n < 1 || df < 1 {
		return math.Inf(1)
	}
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(df)}
	return (t.Quantile(1-alpha/2) + t.Quantile(power)) * sigma / math.Sqrt(float64(n)/inflation)
}

// PairedRounds is the number of pairs that detects effect with the given power: the smallest n with
// PairedMDE(n) <= effect, at least 2; 0 when effect is not positive or sigma is not finite, and limit+1
// when not even limit pairs do.
func PairedRounds(effect, sigma, alpha, power, inflation float64, limit int) int {
	return Rounds(effect, sigma, alpha, power, inflation, limit, func(n int) int { return n - 1 })
}

// Rounds is PairedRounds for an estimate with df(n) degrees of freedom after n rounds (RoundsMDE).
func Rounds(effect, sigma, alpha, power, inflation float64, limit int, df func(n int) int) int {
	if !(effect > 0) || math.IsNaN(sigma) || math.IsInf(sigma, 0) {
		return 0
	}
	mde := func(n int) float64 { return RoundsMDE(n, df(n), sigma, alpha, power, inflation) }
	if mde(limit) > effect {
		return limit + 1
	}
	lo, hi := 2, limit // the MDE falls with n: find the first n at or below effect
	for lo < hi {
		mid := (lo + hi) / 2
		if mde(mid) <= effect {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// BinomialCI is the exact (Clopper–Pearson) confidence interval at level of a proportion seen k times in
// n: how the benchmarks report a detection rate or a false-positive count.
func BinomialCI(k, n int, level float64) (lo, hi float64) {
	if n <= 0 || k < 0 || k > n {
		return math.NaN(), math.NaN()
	}
	a := (1 - level) / 2
	if k > 0 {
		lo = distuv.Beta{Alpha: float64(k), Beta: float64(n - k + 1)}.Quantile(a)
	}
	hi = 1
	if k < n {
		hi = distuv.Beta{Alpha: float64(k + 1), Beta: float64(n - k)}.Quantile(1 - a)
	}
	return lo, hi
}
