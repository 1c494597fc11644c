package netpath

import (
	"time"

	"github.com/tare-dev/tare/internal/session"
)

// Trial is one measured run of the load generator over one lane, with what the node spent meanwhile.
type Trial struct {
	Seq int `json:"seq"` // from 1, in the order run
	Slot
	Start time.Time `json:"start"` // the measured window
	End   time.Time `json:"end"`
	Outcome
	// PathMTU is the MTU of the path the trial ran over: the loopback's on the host path and in a
	// hostNetwork pod, the pod network's on the others (the lane's --mtu, else the network's own; 0 when
	// unknown: not a tare lab).
	PathMTU  int                `json:"path_mtu,omitempty"`
	NodeBusy float64            `json:"node_busy_m"` // millicores: the node's busy time over the window
	Groups   map[string]float64 `json:"groups_m"`    // millicores per group (component, pod, other, …)
	// CPUPerUnit is the node's CPU-seconds per unit of work: per Gbit moved (streams), per 10,000 round
	// trips (tcp-rr).
	CPUPerUnit float64           `json:"cpu_per_unit"`
	Warnings   []session.Warning `json:"warnings,omitempty"` // the trial window's, each with its sample
	Error      string            `json:"error,omitempty"`    // the trial did not run or the tool failed
}

// Unit names what CPUPerUnit is per.
func (m Mode) Unit() string {
	if m.Stream() {
		return "Gbit"
	}
	return "10k transactions"
}

// units is the work a trial did per second, in the mode's unit.
func (t Trial) units() float64 {
	if t.Lane.Mode.Stream() {
		return t.Gbps
	}
	return t.TPS / 1e4
}

// perUnit divides millicores by the trial's work per second: CPU-seconds per unit.
func (t Trial) perUnit(millicores float64) float64 {
	if u := t.units(); u > 0 {
		return millicores / 1000 / u
	}
	return 0
}
