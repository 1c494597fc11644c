package stats

import (
	"fmt"
	"math"
	"sync"

	"gonum.org/v1/gonum/stat/distuv"
)

// GroupSequential is a two-sided group-sequential test: the data are looked at several times as they
// come, and the test may stop at any look, yet the chance of a false positive over all looks together stays
// at Alpha. The alpha is spent by the Lan–DeMets O'Brien–Fleming-type function (OBFSpent): almost nothing at
// early looks, so early stops need overwhelming evidence and the last look's bound is close to the fixed
// test's 1.96. Looks may fall at any information fractions, planned or not, as long as when to look does not
// depend on the data. Bounds come from the joint normal distribution of the z-statistics at the looks
// (independent increments), integrated numerically as in Jennison & Turnbull (2000), chapter 19.
type GroupSequential struct {
	Alpha     float64   `json:"alpha"`
	Fractions []float64 `json:"fractions"` // information at each look over the planned maximum, increasing
	Bounds    []float64 `json:"bounds"`    // |z| at or beyond Bounds[k] at look k rejects
	Spent     []float64 `json:"spent"`     // alpha spent up to and including each look
}

// SpendingName says in the output which method keeps the error rate under repeated looks.
const SpendingName = "group-sequential, Lan–DeMets O'Brien–Fleming alpha spending"

// OBFSpent is the alpha spent by information fraction t of a two-sided test at level alpha, alpha/2 on
// each side by Lan and DeMets' O'Brien–Fleming-type function (gsDesign's sfLDOF, R's ldbounds):
// 2·(2 - 2Φ(z(1-alpha/4)/√t)), 0 at the start and alpha at t = 1 (and beyond).
func OBFSpent(t, alpha float64) float64 {
	if t <= 0 {
		return 0
	}
	t = math.Min(t, 1)
	return 4 * tail(distuv.UnitNormal.Quantile(1-alpha/4)/math.Sqrt(t))
}

// NewGroupSequential works out the bounds of looks at the given information fractions (each in (0, 1],
// increasing); a last look before 1 spends only what the function has spent by then.
func NewGroupSequential(fractions []float64, alpha float64) (GroupSequential, error) {
	g := GroupSequential{Alpha: alpha, Fractions: fractions}
	if !(alpha > 0 && alpha < 1) {
		return g, fmt.Errorf("alpha %v is not in (0, 1)", alpha)
	}
	prev := 0.0
	for _, t := range fractions {
		if !(t > prev && t <= 1) {
			return g, fmt.Errorf("information fractions %v are not increasing in (0, 1]", fractions)
		}
		prev = t
	}
	var d *density
	for k, t := range fractions {
		spent := OBFSpent(t, alpha)
		target := spent
		if k > 0 {
			target -= g.Spent[k-1]
		}
		// Bisection on the bound: the chance of first crossing here falls as the bound rises.
		lo, hi := 0.0, 40.0
		for range 200 {
			mid := (lo + hi) / 2
			if d.cross(t, mid, 0) > target {
				lo = mid
			} else {
				hi = mid
			}
		}
		c := (lo + hi) / 2
		g.Bounds = append(g.Bounds, c)
		g.Spent = append(g.Spent, spent)
		d = d.next(t, c, 0)
	}
	return g, nil
}

// Power is the chance that the test rejects at some look when the z-statistic drifts by drift at full
// information (E[Z_k] = drift·√t_k), either side counted.
func (g GroupSequential) Power(drift float64) float64 {
	var d *density
	var p float64
	for k, t := range g.Fractions {
		p += d.cross(t, g.Bounds[k], drift)
		d = d.next(t, g.Bounds[k], drift)
	}
	return p
}

// Inflation is how many times the fixed test's sample size the sequential test needs at full information
// to keep power (e.g. 0.8) against the same effect: (drift / (z(1-alpha/2) + z(power)))², a little above 1
// for O'Brien–Fleming spending.
func (g GroupSequential) Inflation(power float64) float64 {
	fixed := distuv.UnitNormal.Quantile(1-g.Alpha/2) + distuv.UnitNormal.Quantile(power)
	lo, hi := 0.0, 20.0
	for range 50 {
		mid := (lo + hi) / 2
		if g.Power(mid) < power {
			lo = mid
		} else {
			hi = mid
		}
	}
	r := (lo + hi) / 2 / fixed
	return r * r
}

// density is the sub-density of the score S = Z·√t at a look, over the look's continuation region
// (-c√t, c√t), on an odd grid for Simpson's rule; nil before the first look (S = 0 at t = 0).
type density struct {
	t    float64   // the look's information fraction
	s, f []float64 // grid points and the density there
	w    []float64 // Simpson weights times the step
}

const gridPoints = 161 // odd: Simpson's rule over the continuation region

// cross is the chance of being in d's continuation region and then crossing ±c at the look at t, with
// drift per unit of information.
func (d *density) cross(t, c, drift float64) float64 {
	if d == nil {
		sd := math.Sqrt(t)
		mean := drift * t
		return tail((c*sd-mean)/sd) + tail((c*sd+mean)/sd)
	}
	dt := t - d.t
	sd := math.Sqrt(dt)
	edge := c * math.Sqrt(t)
	var p float64
	for i, u := range d.s {
		mean := u + drift*dt
		p += d.w[i] * d.f[i] * (tail((edge-mean)/sd) + tail((edge+mean)/sd))
	}
	return p
}

// next is the density at the look at t over its continuation region |Z| < c.
func (d *density) next(t, c, drift float64) *density {
	edge := c * math.Sqrt(t)
	n := &density{t: t, s: make([]float64, gridPoints), f: make([]float64, gridPoints), w: make([]float64, gridPoints)}
	h := 2 * edge / float64(gridPoints-1)
	for i := range n.s {
		n.s[i] = -edge + float64(i)*h
		switch {
		case i == 0 || i == gridPoints-1:
			n.w[i] = h / 3
		case i%2 == 1:
			n.w[i] = 4 * h / 3
		default:
			n.w[i] = 2 * h / 3
		}
	}
	if d == nil {
		sd := math.Sqrt(t)
		for i, s := range n.s {
			n.f[i] = normPDF((s-drift*t)/sd) / sd
		}
		return n
	}
	dt := t - d.t
	sd := math.Sqrt(dt)
	for i, s := range n.s {
		var f float64
		for j, u := range d.s {
			f += d.w[j] * d.f[j] * normPDF((s-u-drift*dt)/sd) / sd
		}
		n.f[i] = f
	}
	return n
}

// tail is P(Z > x) of a standard normal, precise far out (gonum's Survival is 1 - CDF, 0 beyond 8.3).
func tail(x float64) float64 { return distuv.UnitNormal.CDF(-x) }

func normPDF(z float64) float64 { return math.Exp(-z*z/2) / math.Sqrt(2*math.Pi) }

// Look is the group-sequential test at one look of paired differences: the t-statistic of their mean,
// turned into the z with the same two-sided p (so the normal bounds serve small samples), the bound it is
// held to, and the repeated confidence interval of the mean at that look, which holds the true mean at every
// look at once with probability 1 - Alpha, so stopping when it excludes an effect is safe too.
type Look struct {
	N        int     `json:"n"`
	Fraction float64 `json:"fraction"`
	Mean     float64 `json:"mean"`
	SE       float64 `json:"se"`
	Z        float64 `json:"z"`
	Bound    float64 `json:"bound"`
	Lo       float64 `json:"ci_low"` // repeated confidence interval
	Hi       float64 `json:"ci_high"`
}

// LookAt evaluates the look at bound c on the differences d (at least 2).
func LookAt(d []float64, fraction, c float64) Look {
	return LookAtEstimate(PhaseMean(d, nil, 1), fraction, c)
}

// LookAtEstimate evaluates the look at bound c on an estimate of the mean difference (PhaseMean): its t
// on e.DF degrees of freedom turned into z, and its repeated interval.
func LookAtEstimate(e Estimate, fraction, c float64) Look {
	l := Look{N: e.N, Fraction: fraction, Bound: c, Mean: math.NaN(), SE: math.NaN(), Z: math.NaN(), Lo: math.NaN(), Hi: math.NaN()}
	if e.DF < 1 || math.IsNaN(e.Mean) {
		return l
	}
	l.Mean, l.SE = e.Mean, e.SE
	st := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(e.DF)}
	tc := st.Quantile(distuv.UnitNormal.CDF(c)) // the t bound with the z bound's tail
	l.Lo, l.Hi = l.Mean-tc*l.SE, l.Mean+tc*l.SE
	switch {
	case l.SE == 0 && l.Mean == 0:
		l.Z = 0
	case l.SE == 0:
		l.Z = math.Copysign(math.Inf(1), l.Mean)
	default:
		tv := l.Mean / l.SE
		l.Z = math.Copysign(-distuv.UnitNormal.Quantile(st.CDF(-math.Abs(tv))), tv)
	}
	return l
}

// Rejects says whether the look's statistic is at or beyond its bound.
func (l Look) Rejects() bool { return math.Abs(l.Z) >= l.Bound }

// Excludes says whether the repeated interval lies strictly within (-effect, effect): no change as large
// as effect, either way.
func (l Look) Excludes(effect float64) bool { return l.Lo > -effect && l.Hi < effect }

// boundsCache keeps the bounds of designs already worked out: an experiment looks at the same fractions
// after every round, and simulations at the same design many times.
var boundsCache sync.Map // key: fmt of alpha and fractions -> GroupSequential

// CachedGroupSequential is NewGroupSequential, worked out once per design.
func CachedGroupSequential(fractions []float64, alpha float64) (GroupSequential, error) {
	key := fmt.Sprint(alpha, fractions)
	if g, ok := boundsCache.Load(key); ok {
		return g.(GroupSequential), nil
	}
	g, err := NewGroupSequential(fractions, alpha)
	if err == nil {
		boundsCache.Store(key, g)
	}
	return g, err
}
