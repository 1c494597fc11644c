package compare

import (
	"slices"
	"strings"

	"github.com/tare-dev/tare/internal/component"
	"github.com/tare-dev/tare/internal/summary"
)

// The metric families a spec may ask for, by name; each is one metric unless it says otherwise.
const (
	NodeBusy        = "node-busy"         // the node's busy CPU without tare's own (millicores)
	ControlPlaneCPU = "control-plane-cpu" // the control plane's components' CPU summed (millicores)
	ComponentCPU    = "component-cpu"     // each core component's CPU, as <component>-cpu
	ComponentMemory = "component-memory"  // each core component's memory, as <component>-memory (MiB)
	EtcdWrites      = "etcd-writes"       // etcd's disk writes (KiB/s)
	DaemonSetFamily = "daemonset"         // a DaemonSet variant's cost, the daemonset-* metrics
)

// families are the metric families a spec may ask for.
var families = []string{NodeBusy, ControlPlaneCPU, ComponentCPU, ComponentMemory, EtcdWrites, APIRequests, DaemonSetFamily}

// components are the groups whose CPU and memory are reported one by one: the lab's control plane, node
// agents and container runtime, in the component registry's order.
var components = component.Names(component.Entry.Core)

// controlPlane are the control plane's among them.
var controlPlane = component.Names(func(e component.Entry) bool { return e.Core() && e.Role == component.RoleControlPlane })

// APIWatches is the watches open on the API server at the end of a window, of the api-requests family (the
// same scrape of its metrics): a DaemonSet's agents each hold theirs for as long as they run.
const APIWatches = "api-watches"

// APIRequests is the API server's request rate, requests a minute (apiserver_request_total).
const APIRequests = "api-requests"

// Guard metrics: higher is worse for both.
const (
	GuardReady   = "ready-seconds"  // (re)start to a Deployment reachable through its Service
	GuardLatency = "api-latency-ms" // median of API GETs
)

// Families returns the metric families a spec may ask for, in the order Measure takes them by default. The
// caller owns the slice.
func Families() []string { return slices.Clone(families) }

// KnownFamily says whether m is a metric family.
func KnownFamily(m string) bool { return slices.Contains(families, m) }

// KnownPrimary says whether m can be an experiment's primary metric: a family that is one number
// (node-busy, control-plane-cpu, etcd-writes, api-requests), one component's CPU or memory (etcd-cpu,
// kube-apiserver-memory, …) or a guard.
func KnownPrimary(m string) bool {
	switch m {
	case NodeBusy, ControlPlaneCPU, EtcdWrites, APIRequests, APIWatches, GuardReady, GuardLatency:
		return true
	}
	if slices.Contains(daemonSetMetrics, m) {
		return true
	}
	for _, c := range components {
		if m == c+"-cpu" || m == c+"-memory" {
			return true
		}
	}
	return false
}

// Unit is the unit of a metric, by name: m (millicores) unless the name says otherwise.
func Unit(name string) string {
	switch {
	case name == GuardReady:
		return "s"
	case name == GuardLatency:
		return "ms"
	case strings.HasSuffix(name, "-memory"):
		return "MiB"
	case name == EtcdWrites:
		return "KiB/s"
	case name == APIRequests:
		return "/min"
	case name == DaemonSetPods:
		return "pods"
	case name == APIWatches:
		return "watches"
	}
	return "m"
}

// Measure turns a window's summary (and the API server's request rate, negative when unknown) into the
// asked metric families (all when none). CPU is millicores; node busy is the summary's (sample.BusyMeter,
// the one definition every verb uses) without tare's own CPU.
func Measure(sum summary.Summary, apiPerMin float64, asked []string) map[string]float64 {
	if len(asked) == 0 {
		asked = families
	}
	groups := map[string]summary.Group{}
	for _, g := range sum.Groups {
		groups[g.Name] = g
	}
	out := map[string]float64{}
	for _, f := range asked {
		switch f {
		case NodeBusy:
			self := 0.0
			if sum.Self != nil {
				self = sum.Self.CPU.Mean
			}
			out[NodeBusy] = sum.Reconcile.NodeBusy - self
		case ControlPlaneCPU:
			var cp float64
			for _, c := range controlPlane {
				cp += groups[c].CPU.Mean
			}
			out[ControlPlaneCPU] = cp
		case ComponentCPU:
			for _, c := range components {
				if g, ok := groups[c]; ok {
					out[c+"-cpu"] = g.CPU.Mean
				}
			}
		case ComponentMemory:
			for _, c := range components {
				if g, ok := groups[c]; ok {
					mem := g.PSS
					if mem == 0 {
						mem = g.RSS
					}
					out[c+"-memory"] = mem / (1 << 20)
				}
			}
		case EtcdWrites:
			if g, ok := groups[component.Etcd]; ok {
				out[EtcdWrites] = g.WriteBps / 1024
			}
		case APIRequests:
			if apiPerMin >= 0 {
				out[APIRequests] = apiPerMin
			}
		}
	}
	return out
}

// Order sorts metric names for tables: the primary first, then the DaemonSet's cost, node busy, control plane, components,
// memory, writes, requests, guards. It returns a new slice.
func Order(names []string, primary string) []string {
	rank := func(n string) int {
		switch {
		case n == primary:
			return 0
		case slices.Contains(daemonSetMetrics, n):
			return 1
		case n == NodeBusy:
			return 2
		case n == ControlPlaneCPU:
			return 3
		case strings.HasSuffix(n, "-cpu"):
			return 4
		case strings.HasSuffix(n, "-memory"):
			return 5
		case n == EtcdWrites:
			return 6
		case n == APIRequests, n == APIWatches:
			return 7
		}
		return 8
	}
	out := slices.Clone(names)
	slices.SortStableFunc(out, func(a, b string) int {
		if d := rank(a) - rank(b); d != 0 {
			return d
		}
		if da, db := slices.Index(daemonSetMetrics, a), slices.Index(daemonSetMetrics, b); da >= 0 && db >= 0 {
			return da - db
		}
		ia, ib := slices.Index(components, strings.TrimSuffix(strings.TrimSuffix(a, "-cpu"), "-memory")), slices.Index(components, strings.TrimSuffix(strings.TrimSuffix(b, "-cpu"), "-memory"))
		if ia != ib {
			return ia - ib
		}
		return strings.Compare(a, b)
	})
	return out
}
