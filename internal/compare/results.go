package compare

import (
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/tare-dev/tare/internal/session"
	"github.com/tare-dev/tare/internal/stats"
	"github.com/tare-dev/tare/internal/warning"
)

// Trial is one observation of one variant: an experiment's trial, or one block of a recording in a diff.
type Trial struct {
	Seq       int                `json:"seq"`   // position in the run order, from 1
	Round     int                `json:"round"` // which repetition of its variant, from 1
	Variant   string             `json:"variant"`
	Started   time.Time          `json:"started"`
	Status    string             `json:"status"` // ok, failed
	Error     string             `json:"error,omitempty"`
	Metrics   map[string]float64 `json:"metrics,omitempty"`
	Guard     map[string]float64 `json:"guard,omitempty"`
	Recording string             `json:"recording,omitempty"`
	// Warnings are what went wrong in the window without stopping it, each with its sample.
	Warnings []session.Warning `json:"warnings,omitempty"`
	// Labs, in a concurrent experiment, are the metrics of each lab of the trial's share (Metrics are
	// their sums): the lab-level estimate (Plan.Labs) reads them.
	Labs []LabMetrics `json:"labs,omitempty"`
}

// LabMetrics are one lab's metrics in a concurrent experiment's trial; Lab is its number, from 1.
type LabMetrics struct {
	Lab     int                `json:"lab"`
	Metrics map[string]float64 `json:"metrics"`
}

// Design is what the analysis needs to know of an experiment.
type Design struct {
	Name string
	// Variants are the variants' names, the baseline first.
	Variants []string
	Alpha    float64
	// Primary is the metric a recommendation rests on; empty: control-plane-cpu, or node-busy when the
	// trials did not measure the control plane.
	Primary string
	// Tolerance is how much worse (percent) a guard may get before it blocks a recommendation.
	Tolerance float64
	// Sweep, when the variants are one flag's values, is shown with the results (and drawn as a chart).
	Sweep *Sweep
	// Observation is what one observation is called in warnings: "trial" (when empty) or "block".
	Observation string
	// Plan, once a sequential experiment has one, pairs the trials by round and decides the primary metric
	// by group-sequential looks (sequential.go).
	Plan *Plan
}

// Sweep is one flag over values; the first value is the baseline.
type Sweep struct {
	Flag   string `json:"flag"` // COMPONENT.FLAG
	Values Values `json:"values"`
}

// Values are flag values, written in YAML as strings or numbers.
type Values []string

// UnmarshalJSON accepts a list of strings and numbers.
func (v *Values) UnmarshalJSON(b []byte) error {
	var raw []json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return fmt.Errorf("values: want a list, got %s", b)
	}
	for _, r := range raw {
		var s string
		if err := json.Unmarshal(r, &s); err != nil {
			s = string(r) // a number, as written
		}
		*v = append(*v, s)
	}
	return nil
}

// Cell is one variant's values of one metric, and how they differ from the baseline's.
type Cell struct {
	Variant  string       `json:"variant"`
	Median   stats.Median `json:"median"`
	Shift    *stats.Shift `json:"shift,omitempty"` // nil for the baseline
	DeltaPct Num          `json:"delta_percent"`   // shift / baseline median
	LoPct    Num          `json:"ci_low_percent"`
	HiPct    Num          `json:"ci_high_percent"`
	MDE      Num          `json:"min_detectable"`                // smallest shift this run could detect (80% power); null: none could
	MDEPct   Num          `json:"min_detectable_percent"`        // of the baseline median
	MDENote  string       `json:"min_detectable_note,omitempty"` // why MDE or MDEPct is null when it is not the number of trials
}

// Num is a number that may be undefined (a percentage of zero) or infinite (an effect no number of trials
// of this size could detect): JSON null then.
type Num float64

// MarshalJSON writes null for NaN and ±Inf.
func (n Num) MarshalJSON() ([]byte, error) {
	if math.IsNaN(float64(n)) || math.IsInf(float64(n), 0) {
		return []byte("null"), nil
	}
	return json.Marshal(float64(n))
}

// UnmarshalJSON reads null as NaN.
func (n *Num) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*n = Num(math.NaN())
		return nil
	}
	var f float64
	err := json.Unmarshal(b, &f)
	*n = Num(f)
	return err
}

// Row is one metric across the variants (the baseline first).
type Row struct {
	Metric string `json:"metric"`
	Unit   string `json:"unit"`
	Guard  bool   `json:"guard,omitempty"`
	Cells  []Cell `json:"cells"`
}

// Label names the row as tables and charts show it: "metric (unit)", "guard: " first for a guard.
func (r Row) Label() string {
	name := r.Metric + " (" + r.Unit + ")"
	if r.Guard {
		name = "guard: " + name
	}
	return name
}

// Verdict is what a variant's results say.
type Verdict struct {
	Variant     string            `json:"variant"`
	Baseline    bool              `json:"baseline,omitempty"`
	Trials      int               `json:"trials"`
	Failed      int               `json:"failed,omitempty"`
	GuardOK     bool              `json:"guard_ok"`
	Guard       []warning.Warning `json:"guard_notes,omitempty"` // guard metrics worse than the tolerance
	Recommended bool              `json:"recommended"`
	Summary     string            `json:"summary"`
}

// Results are an experiment's (or a diff's) comparisons. Renderers read them and never change them.
type Results struct {
	Name      string            `json:"name"`
	Alpha     float64           `json:"alpha"`
	Primary   string            `json:"primary"`
	Tolerance float64           `json:"guard_tolerance_percent"`
	Rows      []Row             `json:"rows"`
	Verdicts  []Verdict         `json:"verdicts"`
	Warnings  []warning.Warning `json:"warnings,omitempty"`
	Sweep     *Sweep            `json:"sweep,omitempty"`
	// Plan and Sequential: a sequential experiment's design and each variant's answer on the primary metric.
	Plan       *Plan        `json:"plan,omitempty"`
	Sequential []Sequential `json:"sequential,omitempty"`
	Trials     []Trial      `json:"trials"`
}
