package experiment

import "github.com/tare-dev/tare/internal/compare"

// The comparison of trials lives in internal/compare; these names let the runner's callers keep saying
// experiment.Trial and experiment.Results for what an experiment stores and reports.
type (
	// Trial is one run of one variant, as recorded.
	Trial = compare.Trial
	// Results are an experiment's comparisons.
	Results = compare.Results
	// Row is one metric across the variants (the baseline first).
	Row = compare.Row
	// Sweep is one flag over values; the first value is the baseline.
	Sweep = compare.Sweep
	// Values are flag values, written in YAML as strings or numbers.
	Values = compare.Values
)

// Guard metrics: higher is worse for both.
const (
	GuardReady   = compare.GuardReady
	GuardLatency = compare.GuardLatency
)

// Analyze compares every variant with the baseline (compare.Analyze over the spec's design), and for a
// sequential experiment with its plan (nil before the pilot has ended) looks at the primary metric's pairs.
func Analyze(spec *Spec, plan *compare.Plan, trials []Trial) Results {
	return compare.Analyze(spec.designWith(plan), trials)
}

func (s *Spec) designWith(plan *compare.Plan) compare.Design {
	d := s.design()
	d.Plan = plan
	return d
}

// design is what the comparison needs of the spec: the variants' names with the baseline first, then the
// others in the spec's order.
func (s *Spec) design() compare.Design {
	base := s.Baseline().Name
	names := []string{base}
	for _, v := range s.Variants {
		if v.Name != base {
			names = append(names, v.Name)
		}
	}
	return compare.Design{Name: s.Name, Variants: names, Alpha: s.Alpha, Primary: s.Primary,
		Tolerance: float64(s.Guard.Tolerance), Sweep: s.Sweep}
}
