package stats

import (
	"math"
)

// LabObs is one lab's value of a metric in one round of a concurrent experiment, and whether the lab ran
// the variant (Treated) or the baseline in that round.
type LabObs struct {
	Lab     int
	Round   int
	Treated bool
	Y       float64
}

// LabEffect estimates a variant's effect on one lab from every lab's value in every round: the regression
// y = lab + round + effect·treated, with a level of its own for each lab (its etcd's size, the phase of
// its periodic work) and for each round (what the machine did to every lab at once), least squares, the
// noise from the residuals. It is the two-way fixed-effects estimate (statsmodels' OLS of
// y ~ treated + C(lab) + C(round) gives the same coefficient, standard error and residual degrees of
// freedom), computed by demeaning y and treated by lab and by round in turn until they settle (one pass
// when every lab is in every round). N is the number of rounds, and SD the standard error times √N: one
// round's worth of noise, as a plan sizes rounds with. Mean, SE and SD are NaN, and DF 0, when the
// effect is not identified (no lab ran both, within the rounds) or no degree of freedom is left.
func LabEffect(obs []LabObs) Estimate {
	e := Estimate{Mean: math.NaN(), SE: math.NaN(), SD: math.NaN()}
	labs, rounds := index(obs, func(o LabObs) int { return o.Lab }), index(obs, func(o LabObs) int { return o.Round })
	e.N = len(rounds)
	n := len(obs)
	if n == 0 {
		return e
	}
	y, z := make([]float64, n), make([]float64, n)
	li, ri := make([]int, n), make([]int, n)
	for i, o := range obs {
		y[i] = o.Y
		if o.Treated {
			z[i] = 1
		}
		li[i], ri[i] = labs[o.Lab], rounds[o.Round]
	}
	for range 10000 {
		moved := demean(y, li, len(labs)) + demean(z, li, len(labs))
		moved += demean(y, ri, len(rounds)) + demean(z, ri, len(rounds))
		if moved < 1e-26 {
			break
		}
	}
	var zz, zy float64
	for i := range z {
		zz += z[i] * z[i]
		zy += z[i] * y[i]
	}
	// The levels take labs + rounds - (connected groups of labs and rounds) degrees of freedom.
	e.DF = n - (len(labs) + len(rounds) - components(li, ri, len(labs), len(rounds))) - 1
	if zz < 1e-12 || e.DF < 1 {
		e.DF = max(e.DF, 0)
		if zz < 1e-12 {
			e.DF = 0
		}
		return e
	}
	e.Mean = zy / zz
	var ss float64
	for i := range y {
		r := y[i] - e.Mean*z[i]
		ss += r * r
	}
	e.SE = math.Sqrt(ss / float64(e.DF) / zz)
	e.SD = e.SE * math.Sqrt(float64(e.N))
	return e
}

// index numbers the distinct keys of obs from 0 in order of first appearance.
func index(obs []LabObs, key func(LabObs) int) map[int]int {
	m := map[int]int{}
	for _, o := range obs {
		if _, ok := m[key(o)]; !ok {
			m[key(o)] = len(m)
		}
	}
	return m
}

// demean subtracts each group's mean from x (group g[i] of k) and returns the sum of squares it removed.
func demean(x []float64, g []int, k int) float64 {
	sum, cnt := make([]float64, k), make([]float64, k)
	for i, v := range x {
		sum[g[i]] += v
		cnt[g[i]]++
	}
	var moved float64
	for j := range sum {
		m := sum[j] / cnt[j]
		moved += m * m * cnt[j]
		sum[j] = m
	}
	for i := range x {
		x[i] -= sum[g[i]]
	}
	return moved
}

// components counts the connected groups of a bipartite graph of nl labs and nr rounds, an edge for each
// observation (lab li[i] in round ri[i]).
func components(li, ri []int, nl, nr int) int {
	parent := make([]int, nl+nr)
	for i := range parent {
		parent[i] = i
	}
	find := func(a int) int {
		for parent[a] != a {
			parent[a] = parent[parent[a]]
			a = parent[a]
		}
		return a
	}
	c := nl + nr
	for i := range li {
		a, b := find(li[i]), find(nl+ri[i])
		if a != b {
			parent[a] = b
			c--
		}
	}
	return c
}
