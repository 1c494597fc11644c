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
