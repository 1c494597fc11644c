package explain

import (
	"fmt"
	"time"

	"github.com/tare-dev/tare/internal/audit"
	"github.com/tare-dev/tare/internal/output"
	"github.com/tare-dev/tare/internal/pprof"
	"github.com/tare-dev/tare/internal/sample"
	"github.com/tare-dev/tare/internal/summary"
)

// Report is everything explain found, in the order it is printed after the findings.
type Report struct {
	Window   summary.Window `json:"window"`
	NodeBusy float64        `json:"node_busy_millicores"`
	Busy     string         `json:"node_busy_reference"`
	// BusyWarnings qualify NodeBusy: the reconciliation's warnings (parts that do not add up, assumed
	// kernel settings).
	BusyWarnings []summary.Warning `json:"node_busy_warnings,omitempty"`
	Self         float64           `json:"tare_millicores"`
	Groups       []summary.Group   `json:"groups"`
	Findings     []Finding         `json:"findings"`
	Activity     Activity          `json:"activity"`
	API          API               `json:"api"`
	Profiles     []pprof.Summary   `json:"profiles"`
	USE          USE               `json:"use"`
	Facts        *ClusterFacts     `json:"cluster,omitempty"`
	// ClusterRead says when Facts were read; nil without them.
	ClusterRead *ClusterRead      `json:"cluster_read,omitempty"`
	Notes       []string          `json:"notes,omitempty"`    // sources that are missing, and what to do about it
	Warnings    []summary.Warning `json:"warnings,omitempty"` // about the whole window (the summary's)
	Summary     *summary.Summary  `json:"-"`
}

// API is the API-client view: the audit log's, or the API server's metrics when there is no audit log.
type API struct {
	Audit   *audit.Report        `json:"audit,omitempty"`
	Metrics *audit.MetricsReport `json:"metrics,omitempty"`
	Missing string               `json:"missing,omitempty"`
}

// When the cluster's facts were read (ClusterRead.When).
const (
	// ReadAtWindowEnd: read right after a live window, so they describe the cluster that was measured.
	ReadAtWindowEnd = "window end"
	// ReadNow: read when a recording is explained, so they describe the cluster as it is now, which may
	// not be the cluster that was recorded.
	ReadNow = "now"
)

// ClusterRead says when the cluster's facts (nodes, leases, control-plane pods, DNS replicas) were read
// from the live cluster. They are a reading at that moment, not part of the window's samples.
type ClusterRead struct {
	At   time.Time `json:"at"`
	When string    `json:"when"` // ReadAtWindowEnd or ReadNow
	// Note is the label the table and the HTML report print: set when When is ReadNow.
	Note string `json:"note,omitempty"`
}

// NewClusterRead labels facts read at t; recording says a recording is explained, so they were read now.
func NewClusterRead(t time.Time, recording bool) *ClusterRead {
	if !recording {
		return &ClusterRead{At: t, When: ReadAtWindowEnd}
	}
	return &ClusterRead{At: t, When: ReadNow, Note: fmt.Sprintf("the cluster's nodes, leases and replicas were read now (%s), "+
		"when this recording was explained, not when it was made: findings citing them describe the cluster as it is now", t.Format("2006-01-02 15:04:05"))}
}

// New analyses a measurement and assembles the report. api, facts and profiles may be empty.
func New(samples []sample.Sample, sum summary.Summary, api API, facts *ClusterFacts, profiles []pprof.Summary) Report {
	act := Analyze(samples, sum)
	r := Report{Window: sum.Window, NodeBusy: output.Round(sum.Reconcile.NodeBusy, 1), Busy: sum.Reconcile.Reference, BusyWarnings: sum.Reconcile.Warnings, Activity: act,
		API: api, Profiles: profiles, USE: BuildUSE(samples, sum), Facts: facts, Summary: &sum, Groups: sum.Groups}
	if r.Profiles == nil {
		r.Profiles = []pprof.Summary{}
	}
	if sum.Self != nil {
		r.Self = output.Round(sum.Self.CPU.Mean, 1)
	}
	if len(r.Groups) > 12 {
		r.Groups = r.Groups[:12]
	}
	r.Findings = Findings(Inputs{Summary: sum, Activity: act, Audit: api.Audit, Metrics: api.Metrics, Facts: facts})
	if r.Findings == nil {
		r.Findings = []Finding{}
	}
	r.Warnings = sum.Warnings
	return r
}
