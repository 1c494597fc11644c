package compare

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/tare-dev/tare/internal/stats"
)

// Plan is a sequential experiment's design for its primary metric, fixed before its first look (from a
// pilot): trials are paired by round (each variant once per round, next to each other in time), and the
// paired differences are looked at after every round from FirstLook on, with group-sequential bounds, until
// the answer is clear or MaxRounds is reached.
type Plan struct {
	MDEPct    float64 `json:"mde_percent"` // the change asked to detect with 80% power, % of Base
	Base      float64 `json:"base"`        // the baseline's median of the primary metric in the pilot
	Sigma     float64 `json:"sigma"`       // the pilot's standard deviation of one pair's difference
	MaxRounds int     `json:"max_rounds"`  // rounds at full information
	FirstLook int     `json:"first_look"`  // the first round looked at
	// LookEvery is the rounds between looks after FirstLook (0 or 1: every round); the last round is
	// always looked at. Long plans look about 20 times, which keeps the bounds' arithmetic small.
	LookEvery int     `json:"look_every,omitempty"`
	Inflation float64 `json:"inflation"` // pairs the sequential test needs over the fixed test's
	// Budget is the wall time the rounds were sized to fit (0: none), and RoundSeconds what one round took
	// in the pilot.
	BudgetSeconds float64 `json:"budget_seconds,omitempty"`
	RoundSeconds  float64 `json:"round_seconds"`
	// ReachablePct is the change MaxRounds detect with 80% power at Sigma: with a budget, the budget's
	// rounds' (less than MDEPct when they are more than NeedRounds, more when fewer); without, MDEPct.
	ReachablePct float64 `json:"reachable_percent"`
	// NeedRounds are the rounds that detect MDEPct with 80% power at Sigma.
	NeedRounds int    `json:"need_rounds,omitempty"`
	Pilot      string `json:"pilot"` // where Sigma came from: "the first N rounds" or an earlier experiment
	// Labs, in a concurrent experiment (variants side by side on shares of the labs, dealt anew every
	// round), is the number of labs in a share: the estimate is the lab-level regression on every lab's
	// value in every round (stats.LabEffect: a level for each lab and each round) times Labs, a share's
	// difference. 0: the plain mean of the rounds' paired differences.
	Labs int `json:"labs,omitempty"`
	// Shares is the number of variants the labs are dealt to in a concurrent experiment (0: two, as in
	// plans stored before it was kept).
	Shares int `json:"shares,omitempty"`
}

// Power is the power plans are made for.
const Power = 0.8

// Sequential is the group-sequential answer for one variant's primary metric.
type Sequential struct {
	Variant  string `json:"variant"`
	Method   string `json:"method"`
	Pairs    int    `json:"pairs"`
	Looks    []Look `json:"looks"`
	Decision string `json:"decision"` // changed, no-change (no change as large as the plan's), undecided
	// At is the round of the look that decided (0: undecided).
	At int `json:"decided_at_round,omitempty"`
	// The estimate and repeated interval of the deciding look (the last look when undecided), in the
	// metric's unit and as % of the plan's base.
	Mean    Num `json:"mean"`
	Lo      Num `json:"ci_low"`
	Hi      Num `json:"ci_high"`
	MeanPct Num `json:"mean_percent"`
	LoPct   Num `json:"ci_low_percent"`
	HiPct   Num `json:"ci_high_percent"`
	// ReachedPct is the change this many pairs detect with 80% power at their observed noise: the
	// sensitivity reached, against the plan's MDEPct.
	ReachedPct Num  `json:"reached_mde_percent"`
	Reached    bool `json:"reached"`
	// SignedRank is the Wilcoxon signed-rank test of all pairs with its Hodges–Lehmann shift: the robust
	// companion of the mean (it does not steer the stopping).
	SignedRank *stats.Shift `json:"signed_rank,omitempty"`
}

// Look is one look of a sequential test: pairs so far, the z of their mean (t turned into z), its bound
// and the repeated confidence interval.
type Look struct {
	Round    int `json:"round"`
	Pairs    int `json:"pairs"`
	Fraction Num `json:"fraction"`
	Mean     Num `json:"mean"`
	Z        Num `json:"z"`
	Bound    Num `json:"bound"`
	Lo       Num `json:"ci_low"`
	Hi       Num `json:"ci_high"`
}

// Decisions of a sequential test.
const (
	Changed   = "changed"
	NoChange  = "no-change"
	Undecided = "undecided"
)

// SequentialMethod names the method in the output.
const SequentialMethod = stats.SpendingName + "; paired by round, the t of the mean difference at each look as z"

// Method names the plan's sequential method in the output.
func (p Plan) Method() string {
	if p.Labs > 0 {
		return SequentialMethod + LabMethod
	}
	return SequentialMethod
}

// BudgetText says what the budget's rounds detect against what was asked ("" without a budget, or when
// the budget's rounds are exactly those needed).
func (p Plan) BudgetText() string {
	if p.BudgetSeconds <= 0 || p.ReachablePct == p.MDEPct {
		return ""
	}
	budget := (time.Duration(p.BudgetSeconds) * time.Second).String()
	if p.ReachablePct > p.MDEPct {
		return fmt.Sprintf("the budget (%s) cannot reach ±%.1f%%: it allows %d rounds, about %s, which detect ±%.1f%%", budget, p.MDEPct, p.MaxRounds,
			(time.Duration(float64(p.MaxRounds)*p.RoundSeconds*float64(time.Second))).Round(time.Second), p.ReachablePct)
	}
	need := ""
	if p.NeedRounds > 0 {
		need = fmt.Sprintf("; ±%.1f%% needs %d", p.MDEPct, p.NeedRounds)
	}
	return fmt.Sprintf("the budget (%s) allows %d rounds, which detect ±%.1f%%%s: an answer as clear as asked stops early", budget, p.MaxRounds, p.ReachablePct, need)
}

// DF is the degrees of freedom the plan's estimate has after n rounds: n - 1 for the paired mean. The
// lab-level estimate of one variant against the baseline sees their 2·Labs values a round and takes a
// level for each of those rounds and each lab that ran either: 2·Labs·n - n - labs seen. With two
// variants every lab runs one of them every round, (2·Labs - 1)(n - 1) - 1; with V shares a lab runs
// one of the two in a round with chance 2/V, so the labs seen are on average V·Labs·(1 - (1 - 2/V)^n),
// and DF is that average's figure, rounded.
func (p Plan) DF(n int) int {
	if p.Labs <= 0 {
		return n - 1
	}
	if n < 1 {
		return 0
	}
	v := max(p.Shares, 2)
	seen := float64(v*p.Labs) * (1 - math.Pow(1-2/float64(v), float64(n)))
	return max(int(math.Round(float64((2*p.Labs-1)*n)-seen)), 0)
}

// LabMethod is added to SequentialMethod in a concurrent experiment.
const LabMethod = "; the estimate from every lab's value in every round, each lab's and each round's level removed (two-way fixed effects), times the labs in a share"

// estimator gives the plan's estimate of variant - baseline in metric from the first n of rounds (the
// rounds both finished, in order; Pairs): the paired differences' mean, or in a concurrent experiment the
// lab-level regression on those rounds' labs.
func (p Plan) estimator(trials []Trial, baseline, variant, metric string, rounds []int, diffs []float64) func(n int) stats.Estimate {
	if p.Labs <= 0 {
		return func(n int) stats.Estimate { return stats.PhaseMean(diffs[:n], nil, 1) }
	}
	in := map[int]bool{}
	for _, r := range rounds {
		in[r] = true
	}
	var obs []stats.LabObs
	for _, t := range trials {
		if t.Status != "ok" || !in[t.Round] || (t.Variant != baseline && t.Variant != variant) {
			continue
		}
		for _, l := range t.Labs {
			if v, ok := l.Metrics[metric]; ok {
				obs = append(obs, stats.LabObs{Lab: l.Lab, Round: t.Round, Treated: t.Variant == variant, Y: v})
			}
		}
	}
	scale := float64(p.Labs)
	return func(n int) stats.Estimate {
		if n <= 0 {
			return stats.LabEffect(nil)
		}
		last := rounds[n-1]
		var upto []stats.LabObs
		for _, o := range obs {
			if o.Round <= last {
				upto = append(upto, o)
			}
		}
		e := stats.LabEffect(upto)
		e.Mean, e.SE, e.SD = e.Mean*scale, e.SE*scale, e.SD*scale
		return e
	}
}

// Estimate is the plan's estimate of variant - baseline in metric from every round both finished.
func (p Plan) Estimate(trials []Trial, baseline, variant, metric string) stats.Estimate {
	rounds, diffs := Pairs(trials, baseline, variant, metric)
	return p.estimator(trials, baseline, variant, metric, rounds, diffs)(len(rounds))
}

// Pairs are the differences variant - baseline of metric in the rounds where both finished, by round.
func Pairs(trials []Trial, baseline, variant, metric string) (rounds []int, diffs []float64) {
	type pair struct {
		a, b   float64
		ha, hb bool
	}
	by := map[int]*pair{}
	for _, t := range trials {
		if t.Status != "ok" || (t.Variant != baseline && t.Variant != variant) {
			continue
		}
		v, ok := t.Metrics[metric]
		if !ok {
			v, ok = t.Guard[metric]
		}
		if !ok {
			continue
		}
		p := by[t.Round]
		if p == nil {
			p = &pair{}
			by[t.Round] = p
		}
		if t.Variant == baseline {
			p.a, p.ha = v, true
		} else {
			p.b, p.hb = v, true
		}
	}
	for r, p := range by {
		if p.ha && p.hb {
			rounds = append(rounds, r)
		}
	}
	slices.Sort(rounds)
	for _, r := range rounds {
		diffs = append(diffs, by[r].b-by[r].a)
	}
	return rounds, diffs
}

// SequentialFor looks at one variant's pairs as the plan says: after each round from FirstLook on, with
// bounds for the looks' information fractions (pairs over MaxRounds), and stops at the first look whose z
// reaches its bound (changed) or whose repeated interval lies within ±MDEPct of Base (no-change).
func SequentialFor(p Plan, trials []Trial, baseline, variant, metric string, alpha float64) Sequential {
	s := Sequential{Variant: variant, Method: p.Method(), Decision: Undecided,
		Mean: Num(math.NaN()), Lo: Num(math.NaN()), Hi: Num(math.NaN()), MeanPct: Num(math.NaN()), LoPct: Num(math.NaN()), HiPct: Num(math.NaN()), ReachedPct: Num(math.NaN())}
	rounds, diffs := Pairs(trials, baseline, variant, metric)
	s.Pairs = len(diffs)
	if len(diffs) > 0 {
		sr := stats.SignedRank(diffs, alpha)
		s.SignedRank = &sr
	}
	est := p.estimator(trials, baseline, variant, metric, rounds, diffs)
	if e := est(len(rounds)); e.DF >= 1 {
		s.ReachedPct = Num(pctOf(stats.RoundsMDE(len(diffs), e.DF, e.SD, alpha, Power, p.Inflation), p.Base))
		s.Reached = float64(s.ReachedPct) <= p.MDEPct
	}
	// The looks: the rounds of the schedule that completed a pair, in round order.
	var at []int // index into diffs of each look's last pair
	for i, r := range rounds {
		if p.LooksAt(r) && i+1 >= 2 {
			at = append(at, i)
		}
	}
	if len(at) == 0 || p.MaxRounds < 1 {
		return s
	}
	fr := make([]float64, len(at))
	for k, i := range at {
		fr[k] = math.Min(1, float64(i+1)/float64(p.MaxRounds))
	}
	fr = increasing(fr)
	g, err := stats.CachedGroupSequential(fr, alpha)
	if err != nil {
		return s
	}
	effect := p.MDEPct / 100 * p.Base
	for k, i := range at[:len(fr)] {
		l := stats.LookAtEstimate(est(i+1), fr[k], g.Bounds[k])
		s.Looks = append(s.Looks, Look{Round: rounds[i], Pairs: i + 1, Fraction: Num(fr[k]), Mean: Num(l.Mean), Z: Num(l.Z), Bound: Num(l.Bound), Lo: Num(l.Lo), Hi: Num(l.Hi)})
		s.Mean, s.Lo, s.Hi = Num(l.Mean), Num(l.Lo), Num(l.Hi)
		switch {
		case l.Rejects():
			s.Decision = Changed
		case effect > 0 && l.Excludes(effect):
			s.Decision = NoChange
		default:
			continue
		}
		s.At = rounds[i]
		break
	}
	s.MeanPct, s.LoPct, s.HiPct = Num(pctOf(float64(s.Mean), p.Base)), Num(pctOf(float64(s.Lo), p.Base)), Num(pctOf(float64(s.Hi), p.Base))
	return s
}

// LooksAt says whether the plan looks after round r: FirstLook, every LookEvery rounds after it, and
// MaxRounds (and any round beyond, where a resumed or failed-trial run may end).
func (p Plan) LooksAt(r int) bool {
	every := max(p.LookEvery, 1)
	return r >= p.FirstLook && ((r-p.FirstLook)%every == 0 || r >= p.MaxRounds)
}

// LookFractions are the information fractions of the plan's looks, assuming every round completes.
func (p Plan) LookFractions() []float64 {
	var fr []float64
	for r := max(p.FirstLook, 2); r <= p.MaxRounds; r++ {
		if p.LooksAt(r) {
			fr = append(fr, float64(r)/float64(p.MaxRounds))
		}
	}
	return fr
}

// increasing keeps the fractions up to the first that does not rise (rounds past MaxRounds all sit at 1:
// the design ends at full information).
func increasing(fr []float64) []float64 {
	for k := 1; k < len(fr); k++ {
		if fr[k] <= fr[k-1] {
			return fr[:k]
		}
	}
	return fr
}

// Decided says whether every variant's sequential test has an answer: the experiment may stop.
func Decided(seq []Sequential) bool {
	if len(seq) == 0 {
		return false
	}
	for _, s := range seq {
		if s.Decision == Undecided {
			return false
		}
	}
	return true
}

// SequentialText is one line on a variant's sequential answer.
func SequentialText(s Sequential, p Plan, primary string) string {
	switch s.Decision {
	case Changed:
		return fmt.Sprintf("%s changed %+.1f%% [%+.1f%%, %+.1f%%] (repeated interval), stopped at round %d of %d", primary,
			float64(s.MeanPct), float64(s.LoPct), float64(s.HiPct), s.At, p.MaxRounds)
	case NoChange:
		return fmt.Sprintf("no change in %s as large as ±%.1f%%: %+.1f%% [%+.1f%%, %+.1f%%], stopped at round %d of %d", primary,
			p.MDEPct, float64(s.MeanPct), float64(s.LoPct), float64(s.HiPct), s.At, p.MaxRounds)
	}
	return fmt.Sprintf("undecided after %d pairs: %s %+.1f%% [%+.1f%%, %+.1f%%]", s.Pairs, primary,
		float64(s.MeanPct), float64(s.LoPct), float64(s.HiPct))
}
