package htmlreport

// DensityRun is a tare density run as its page shows it. It holds plain figures, which density fills
// (Output.View), so that this package builds without the runner and its Kubernetes client. CPU is in
// millicores, memory in bytes; a figure that could not be fitted is NaN.
type DensityRun struct {
	Node  string
	Image string // what each pod runs: the image, or "3 containers of" it
	// Counts are the pod counts asked for, increasing; each was to be measured once per trial.
	Counts []int
	Trials int
	Window string // measured at each step
	Seed   uint64
	Took   string
	Steps  []DensityStep // in the order measured
	Busy   DensitySeries // node busy
	// Components are the rows of the text table, in its order (busiest marginal CPU first).
	Components []DensityComponent
	Outside    DensityOutside
	Reserved   *DensityReserved // nil without a recommendation
	// Spikes is the reservation at a percentile of 1 s demand, nil without one; Memory the memory kept
	// from the pods as the eviction manager counts it, nil without working sets.
	Spikes *DensitySpikes
	Memory *DensityMemory
	// Allocatable is the measured allocatable's figures (resource → quantity, as the document writes
	// them) in the order capacity, kube-reserved, system-reserved, eviction, allocatable; nil without one.
	Allocatable []DensityAllocatableRow
	// RuntimeClass is the RuntimeClass printed, as YAML; "" when the run gives none.
	RuntimeClass string
	Warnings     []DensityWarning // the report's; a step's own are in the step
	Churn        *DensityChurn    // nil without --churn
}

// DensityStep is one measured window: the pods on the node during it, in one trial.
type DensityStep struct {
	Trial, Pods int
	Seconds     float64
	Warnings    []string // the window's
}

// DensitySeries is one figure against the pod count: its value at each step (in the order of
// DensityRun.Steps) and the line fitted to those values.
type DensitySeries struct {
	Values []float64
	Fit    DensityFit
}

// DensityFit is a Theil–Sen line (density.Fit): Fixed at zero pods plus Marginal per pod, with the 95%
// interval [Lo, Hi] of Marginal, R² of the line on the N points; NaN where it could not be fitted.
type DensityFit struct {
	Fixed, Marginal, Lo, Hi, R2 float64
	N                           int
}

// DensityComponent is one group's cost against the pod count.
type DensityComponent struct {
	Name, Role string
	ChargedTo  string        // where its processes run: in the pod cgroups, outside them, or both
	CPU        DensitySeries // millicores
	Private    DensitySeries // bytes
	PSS, RSS   DensityFit    // bytes
}

// DensityOutside is the per-pod cost of the node's agents, runtime and per-pod runtime processes that run
// outside the pod cgroups (From), fitted to their per-step sum: what the RuntimeClass charges.
type DensityOutside struct {
	From         []string
	CPU, Private DensitySeries
	// ChargedCPU and ChargedPrivate are the per-pod cost the RuntimeClass is made from: the upper ends
	// of the intervals of CPU's and Private's Marginal, 0 below zero, NaN without an interval.
	ChargedCPU, ChargedPrivate float64
}

// DensityReserved is a kube-reserved recommendation for a node that runs MaxPods pods, beside what the
// managed services reserve (density.Reserved).
type DensityReserved struct {
	MaxPods           int
	CPUs, MemoryBytes float64
	From              []string
	// Measured is the summed line at MaxPods pods at the upper end of its 95% interval, Mean its value
	// there; memory is PSS.
	Measured, Mean DensityReservation
	Providers      []DensityReservation // EKS, GKE, AKS
	Extrapolated   bool                 // MaxPods lies beyond the largest count measured
}

// DensitySpikes is kube-reserved and system-reserved CPU at a percentile of 1 s demand at MaxPods pods
// (density.Spikes), with a churn rate's pod starts added when ChurnRate > 0.
type DensitySpikes struct {
	Percentile   float64
	MaxPods      int
	ChurnRate    float64
	Kube, System DensitySpike
}

// DensitySpike is one reservation's CPU at the percentile (millicores) with its 95% interval (Hi may be
// +Inf: too few seconds), the mean of the same seconds, the per-pod slope they were moved by, the
// seconds counted and the groups summed.
type DensitySpike struct {
	CPU, Lo, Hi, Mean, Slope float64
	Seconds                  int
	From                     []string
}

// DensityMemory is the memory at MaxPods pods as the eviction manager counts it (density.MemoryReserved),
// in bytes.
type DensityMemory struct {
	MaxPods                    int
	Peak, Slope                float64
	Kube, System, EvictionHard float64
	EvictionFrom               string
	Windows                    int
}

// DensityAllocatableRow is one line of the measured allocatable: what it is and its quantities by
// resource ("cpu" → "1830m").
type DensityAllocatableRow struct {
	Name              string
	CPU, Memory, Pods string
}

// DensityReservation is CPU (millicores) and memory (bytes) reserved, and for a provider its formula.
type DensityReservation struct {
	Name        string
	CPU, Memory float64
	Formula     string
}

// DensityWarning qualifies a figure of the report.
type DensityWarning struct {
	Code, Figure, Message string
}
