package experiment

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/tare-dev/tare/internal/compare"
	"github.com/tare-dev/tare/internal/stats"
)

// A sequential experiment (spec mde): the pilot's rounds measure the noise of one pair's difference in the
// primary metric; MakePlan sizes the rounds that detect mde with 80% power under group-sequential looks,
// within the budget; the runner adds those rounds to the plan and, after every round from the first look
// on, stops as soon as every variant's answer is clear. The plan is stored in the experiment file, so
// --resume goes on with the same design and the same looks.

const (
	defaultPilotRounds = 3
	// roundLimit is the most rounds a plan asks for: beyond it the pilot is too noisy to plan from.
	roundLimit = 1000
)

// StatusStopped marks the planned trials a sequential experiment did not need.
const StatusStopped = "stopped"

// MakePlan sizes a sequential experiment from pilot trials that took elapsed (their rounds, wall time):
// the noise of one pair's difference (the largest over the variants), the rounds that detect spec.MDE of
// the baseline's median, and, with a budget, the rounds that fit it (the pilot's time counted when the
// pilot is this experiment's own first rounds, own = true), which the plan then runs at most: the
// smallest change the budget can detect.
func MakePlan(spec *Spec, trials []Trial, elapsed time.Duration, source string, own bool) (compare.Plan, error) {
	d := spec.design()
	primary := compare.PrimaryFor(d.Primary, trials)
	p := compare.Plan{MDEPct: float64(spec.MDE), FirstLook: max(spec.PilotRounds, 2), Pilot: source, Inflation: 1}
	var base []float64
	for _, t := range trials {
		if t.Status == "ok" && t.Variant == d.Variants[0] {
			if v, ok := t.Metrics[primary]; ok {
				base = append(base, v)
			}
		}
	}
	p.Base = stats.MedianOf(base)
	if !(p.Base > 0) {
		return p, fmt.Errorf("the pilot (%s) has no positive baseline median of %s to take %.1f%% of", source, primary, p.MDEPct)
	}
	if spec.concurrent() {
		p.Labs, p.Shares = spec.Target.Lab.Replicas/len(d.Variants), len(d.Variants)
	}
	p.Sigma = math.NaN()
	rounds := 0
	for _, v := range d.Variants[1:] {
		_, diffs := compare.Pairs(trials, d.Variants[0], v, primary)
		e := p.Estimate(trials, d.Variants[0], v, primary)
		if e.DF < 1 {
			need := "at least 2 are needed to see the noise"
			if p.Labs > 0 {
				need = "a concurrent experiment needs at least 2, with labs that ran both, and each lab's value in them, to see the noise"
			}
			return p, fmt.Errorf("the pilot (%s) has %d complete round(s) of %s against %s: %s", source, len(diffs), v, d.Variants[0], need)
		}
		rounds = max(rounds, len(diffs))
		if math.IsNaN(p.Sigma) || e.SD > p.Sigma {
			p.Sigma = e.SD
		}
	}
	p.RoundSeconds = elapsed.Seconds() / float64(max(rounds, 1))
	effect := p.MDEPct / 100 * p.Base
	n := stats.Rounds(effect, p.Sigma, spec.Alpha, compare.Power, 1, roundLimit, p.DF)
	// The looks (every round from FirstLook) set the inflation, which sets the rounds: settle both.
	for range 4 {
		if n > roundLimit {
			break
		}
		p.MaxRounds = max(n, p.FirstLook)
		p.LookEvery = lookEvery(p.FirstLook, p.MaxRounds)
		p.Inflation = inflation(p, spec.Alpha)
		next := stats.Rounds(effect, p.Sigma, spec.Alpha, compare.Power, p.Inflation, roundLimit, p.DF)
		if next == n {
			break
		}
		n = next
	}
	if n > roundLimit {
		return p, fmt.Errorf("the pilot (%s) is too noisy to plan from: one pair's difference in %s varies by %.3g (%.0f%% of the baseline's %.4g), and detecting ±%.1f%% would take more than %d rounds; ask for a larger mde or lengthen the window",
			source, primary, p.Sigma, 100*p.Sigma/p.Base, p.Base, p.MDEPct, roundLimit)
	}
	p.MaxRounds = max(n, p.FirstLook)
	p.NeedRounds = p.MaxRounds
	p.ReachablePct = p.MDEPct
	if spec.Budget.Duration > 0 {
		p.BudgetSeconds = spec.Budget.Seconds()
		left := spec.Budget.Duration
		done := 0
		if own {
			left -= elapsed
			done = rounds
		}
		fit := done
		if p.RoundSeconds > 0 {
			fit += int(left.Seconds() / p.RoundSeconds)
		}
		if fit <= done || fit < 2 {
			return p, fmt.Errorf("the budget (%s) leaves no round after the pilot: one round of every variant takes %s", spec.Budget.Duration, time.Duration(p.RoundSeconds*float64(time.Second)).Round(time.Second))
		}
		// The budget's every round is the plan's maximum: the smallest change the time can detect (a pilot's
		// noise from a few rounds is itself noisy, and a plan cut to it would be short when it came out low).
		// Clear answers still stop early.
		if fit != p.MaxRounds {
			p.MaxRounds = fit
			p.FirstLook = min(p.FirstLook, fit)
			p.LookEvery = lookEvery(p.FirstLook, p.MaxRounds)
			p.Inflation = inflation(p, spec.Alpha)
			p.ReachablePct = 100 * stats.RoundsMDE(fit, p.DF(fit), p.Sigma, spec.Alpha, compare.Power, p.Inflation) / p.Base
		}
	}
	return p, nil
}

// maxLooks is about how many looks a plan takes: beyond some 20 the sequential test gains little.
const maxLooks = 20

// lookEvery spaces the looks from first to last so that there are at most about maxLooks.
func lookEvery(first, last int) int {
	return max(1, (last-first+maxLooks-1)/maxLooks)
}

// inflation is the pairs the plan's looks need over the fixed test's.
func inflation(p compare.Plan, alpha float64) float64 {
	fr := p.LookFractions()
	if len(fr) == 0 {
		return 1
	}
	g, err := stats.CachedGroupSequential(fr, alpha)
	if err != nil {
		return 1
	}
	return g.Inflation(compare.Power)
}

// PlanText says what the plan is and what it will take: once what the asked change needs, and, with a
// budget, once what the budget's rounds reach.
func PlanText(p compare.Plan) string {
	need := p.MaxRounds
	if p.NeedRounds > 0 {
		need = p.NeedRounds
	}
	s := fmt.Sprintf("plan: ±%.1f%% of %.4g with 80%% power takes up to %d rounds, about %s at %s a round (looks from round %d; noise of one pair %.3g, from %s)",
		p.MDEPct, p.Base, need, seconds(float64(need)*p.RoundSeconds), seconds(p.RoundSeconds), p.FirstLook, p.Sigma, p.Pilot)
	if p.Labs > 0 {
		s += fmt.Sprintf("\nthe labs are dealt to the variants at random every round, %d a share: the estimate is every lab's value in every round with each lab's and each round's level removed", p.Labs)
	}
	if b := p.BudgetText(); b != "" {
		s += "\n" + b
	}
	return s
}

func seconds(s float64) time.Duration {
	return time.Duration(s * float64(time.Second)).Round(time.Second)
}

// SavePlan stores the plan in the experiment file: --resume keeps it.
func (st *Store) SavePlan(ctx context.Context, p compare.Plan) error {
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	_, err = st.db.ExecContext(ctx, "INSERT OR REPLACE INTO meta VALUES('plan', ?)", string(b))
	return err
}

// Extend plans rounds from+1..to, each variant once per round in a random order (from the spec's seed and
// the round, so a resumed experiment plans the same), and stores them.
func (st *Store) Extend(ctx context.Context, trials []Trial, to int) ([]Trial, error) {
	from, seq := 0, 0
	for _, t := range trials {
		from, seq = max(from, t.Round), max(seq, t.Seq)
	}
	for round := from + 1; round <= to; round++ {
		rng := rand.New(rand.NewPCG(st.Spec.Seed, uint64(round)))
		for _, i := range rng.Perm(len(st.Spec.Variants)) {
			seq++
			t := Trial{Seq: seq, Round: round, Variant: st.Spec.Variants[i].Name, Status: "planned"}
			if err := st.Save(ctx, t); err != nil {
				return trials, err
			}
			trials = append(trials, t)
		}
	}
	return trials, nil
}

// roundDone says whether every trial of round has finished (ok or failed).
func roundDone(trials []Trial, round int) bool {
	for _, t := range trials {
		if t.Round == round && (t.Status == "planned" || t.Status == "") {
			return false
		}
	}
	return true
}

// elapsedSince is the wall time from the first trial's start to now.
func elapsedSince(trials []Trial, now time.Time) time.Duration {
	var first time.Time
	for _, t := range trials {
		if !t.Started.IsZero() && (first.IsZero() || t.Started.Before(first)) {
			first = t.Started
		}
	}
	if first.IsZero() {
		return 0
	}
	return now.Sub(first)
}

// sequentialStep runs after trial i of a sequential experiment: at the end of the pilot it makes the plan
// and adds its rounds; at the end of a later round it looks, and stops (the rest marked stopped) when every
// variant has its answer or the budget is spent.
func (r *Runner) sequentialStep(ctx context.Context, trials []Trial, i int) ([]Trial, bool, error) {
	st, spec := r.Store, r.Store.Spec
	round := trials[i].Round
	if spec.MDE == 0 || !roundDone(trials, round) {
		return trials, false, nil
	}
	if st.Plan == nil {
		if round < spec.PilotRounds {
			return trials, false, nil
		}
		p, err := MakePlan(spec, trials, elapsedSince(trials, time.Now()), fmt.Sprintf("the first %d rounds", round), true)
		if err != nil {
			return trials, true, err
		}
		if err := st.SavePlan(ctx, p); err != nil {
			return trials, true, fmt.Errorf("saving the plan: %w", err)
		}
		st.Plan = &p
		r.say("%s", PlanText(p))
		if trials, err = st.Extend(ctx, trials, p.MaxRounds); err != nil {
			return trials, true, fmt.Errorf("planning the rounds: %w", err)
		}
	}
	res := compare.Analyze(spec.designWith(st.Plan), trials)
	why := ""
	switch {
	case compare.Decided(res.Sequential):
		why = fmt.Sprintf("the answer is clear at round %d", round)
	case spec.Budget.Duration > 0 && elapsedSince(trials, time.Now()) >= spec.Budget.Duration:
		why = fmt.Sprintf("the budget (%s) is spent", spec.Budget.Duration)
	default:
		return trials, false, nil
	}
	n := 0
	for k := range trials {
		if trials[k].Status == "planned" {
			trials[k].Status = StatusStopped
			if err := st.Save(ctx, trials[k]); err != nil {
				return trials, true, fmt.Errorf("saving trial %d: %w", trials[k].Seq, err)
			}
			n++
		}
	}
	r.say("stopped: %s (%d planned trials not needed)", why, n)
	return trials, true, nil
}

// PlanFrom is a plan made from an earlier experiment, before any trial.
type PlanFrom struct{ Plan compare.Plan }

// PlanFromPilot plans spec from the trials of the earlier experiment in dir (the same lab, the same
// primary metric), its wall time spread over its rounds.
func PlanFromPilot(ctx context.Context, spec *Spec, dir string) (*PlanFrom, error) {
	st, trials, err := Open(ctx, dir)
	if err != nil {
		return nil, fmt.Errorf("--pilot: %w", err)
	}
	defer func() { _ = st.Close() }()
	// Pair the pilot's variants as this spec names them: its baseline and its first other variant.
	if len(st.Spec.Variants) < 2 {
		return nil, fmt.Errorf("--pilot %s: the experiment has fewer than two variants", dir)
	}
	names := map[string]string{st.Spec.Baseline().Name: spec.Baseline().Name}
	for _, v := range st.Spec.Variants {
		if v.Name != st.Spec.Baseline().Name {
			names[v.Name] = spec.design().Variants[1]
			break
		}
	}
	var ts []Trial
	var first, last time.Time
	for _, t := range trials {
		if n, ok := names[t.Variant]; ok && t.Status == "ok" {
			t.Variant = n
			ts = append(ts, t)
			if first.IsZero() || t.Started.Before(first) {
				first = t.Started
			}
			if t.Started.After(last) {
				last = t.Started
			}
		}
	}
	// The last trial's start is a trial short of the end: add the mean time between starts.
	elapsed := last.Sub(first)
	if len(ts) > 1 {
		elapsed += elapsed / time.Duration(len(ts)-1)
	}
	p, err := MakePlan(spec, ts, elapsed, "the experiment in "+st.Dir, false)
	if err != nil {
		return nil, fmt.Errorf("--pilot: %w", err)
	}
	return &PlanFrom{Plan: p}, nil
}

// Adopt stores a plan made before the first trial and plans its rounds.
func (st *Store) Adopt(ctx context.Context, p compare.Plan, trials []Trial) ([]Trial, error) {
	if err := st.SavePlan(ctx, p); err != nil {
		return trials, fmt.Errorf("saving the plan: %w", err)
	}
	st.Plan = &p
	return st.Extend(ctx, trials, p.MaxRounds)
}
