package summary

import (
	"fmt"

	"github.com/tare-dev/tare/internal/sample"
	"github.com/tare-dev/tare/internal/warning"
)

// Warning qualifies one figure of a summary, the way benchstat attaches a note to the number it concerns:
// what is wrong with the figure, and its likely cause.
type Warning = warning.Warning

// Warning codes.
const (
	// WarnOverAttributed: groups and tare hold more CPU than the node reference, beyond its resolution.
	WarnOverAttributed = "over-attributed"
	// WarnUnderAttributed: more of node busy was credited to no process than the resolution allows.
	WarnUnderAttributed = "under-attributed"
	// WarnAssumedTick: the kernel's tick rate is assumed, so a /proc/stat resolution is an estimate.
	WarnAssumedTick = "assumed-tick-rate"
	// WarnAssumedIRQ: whether irq time belongs in node busy is assumed (IRQ time accounting off).
	WarnAssumedIRQ = "assumed-irq-accounting"
	// WarnTooFewSamples: the window holds fewer than two samples, so no figure measures anything.
	WarnTooFewSamples = "too-few-samples"
)

// Figures warnings attach to (their JSON names in the reconciliation).
const (
	FigureUnattributed = "unattributed_millicores"
	FigureResolution   = "resolution_millicores"
	FigureNodeBusy     = "node_busy_millicores"
	FigureWindow       = "window"
)

// tolerance is how far unattributed may fall from 0 without a warning: down to minus the resolution, and
// up to the resolution plus the irq time that no process holds (IRQ), which node busy counts and no group
// can. It is the bound WithinTolerance and the warnings on the unattributed figure use.
func (r Reconciliation) tolerance() (lo, hi float64) {
	return -r.Resolution, r.Resolution + r.IRQ
}

// reconcileWarnings says what is wrong with a reconciliation's figures.
func reconcileWarnings(r Reconciliation) []Warning {
	var ws []Warning
	lo, hi := r.tolerance()
	switch {
	case r.Unattributed < lo:
		cause := "CPU of short-lived process trees credited twice, or CPU counted from before the window (a process's first reading)"
		switch r.ReferenceKind {
		case sample.RefCgroupV2:
			cause += "; or threads of the root cgroup that exited, whose CPU after their last reading the cgroup v2 reference misses"
		case sample.RefProcStat, sample.RefCgroupV2RootStat:
			cause += "; or /proc/stat's tick sampling, which misses load that runs in step with the tick"
		}
		ws = append(ws, Warning{Code: WarnOverAttributed, Figure: FigureUnattributed, Cause: cause,
			Message: fmt.Sprintf("groups and tare hold %.1fm more than node busy (%s), beyond its ±%.1fm resolution", -r.Unattributed, r.Reference, r.Resolution)})
	case r.Unattributed > hi:
		msg := fmt.Sprintf("%.1fm of node busy was credited to no process, beyond the ±%.1fm resolution", r.Unattributed, r.Resolution)
		if r.IRQ > 0 {
			msg += fmt.Sprintf(" and the %.1fm of irq time no process holds", r.IRQ)
		}
		ws = append(ws, Warning{Code: WarnUnderAttributed, Figure: FigureUnattributed, Message: msg,
			Cause: "CPU tare could not attribute: processes it could not read (see the limitations), or short-lived processes whose exit it did not see"})
	}
	if r.TickHZAssumed && !r.ReferenceExact {
		ws = append(ws, Warning{Code: WarnAssumedTick, Figure: FigureResolution,
			Message: fmt.Sprintf("the resolution of /proc/stat busy assumes a %d Hz tick", r.TickHZ),
			Cause:   "no kernel configuration was found (/proc/config.gz, or /boot/config-RELEASE under --host-root)"})
	}
	return ws
}
