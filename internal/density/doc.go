// Package density measures what one more pod costs a node: it steps the number of idle pods on one node
// through given counts, interleaved and repeated, measures a window at each step with the measuring session,
// and fits each component's CPU and memory against the pod count with a robust line (Theil–Sen, bootstrap
// intervals). From the per-pod costs that the pod's cgroup does not see (containerd's shims run outside it)
// it writes a RuntimeClass whose overhead.podFixed accounts for them. `tare density` calls it.
//
// plan.go orders the steps, fit.go fits a line, model.go turns measured windows into per-component models
// (pure); runtimeclass.go builds the RuntimeClass; run.go drives the cluster and the session; churn.go is
// the churn phase (--churn: CPU per pod start) and churner.go the pods it starts and deletes;
// percentile.go reads kube-reserved and system-reserved CPU at a percentile of 1 s demand (pure), memory.go
// the working set the eviction manager sees (kernel's reader) and the measured allocatable (fit's type); kwok.go the
// control plane's variant on kwok nodes (--kwok); htmlview.go gives the report's plain view for its HTML
// page.
//
// It imports session (the measuring session), kube (pods, namespaces), classify and component (which
// group is which component), summary, stats, fit (reading the node as tare fit does), deploy (the
// RuntimeClass's YAML), output, warning, userfile (a stored result is a regular file, read within a bound) and htmlreport (the page's view type, DensityRun). A new per-pod figure
// goes in model.go with its fit; a new way to step the pods goes in plan.go.
//
// Imports: classify, component, deploy, fit, htmlreport, kernel, kube, output, session, stats, summary, userfile, warning
package density
