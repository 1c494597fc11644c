package experiment

import (
	"slices"
	"strings"

	"github.com/tare-dev/tare/internal/summary"
)

// Metric families a spec may ask for.
var metricNames = []string{"node-busy", "control-plane-cpu", "component-cpu", "component-memory", "etcd-writes", "api-requests"}

// components are the groups whose CPU and memory are reported one by one.
var components = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "kube-proxy", "containerd"}

var controlPlane = components[:4]

func knownMetric(m string) bool { return slices.Contains(metricNames, m) }

// knownPrimary: a family that is one number (node-busy, control-plane-cpu, etcd-writes, api-requests),
// one component's CPU or memory (etcd-cpu, kube-apiserver-memory, …) or a guard.
func knownPrimary(m string) bool {
	switch m {
	case "node-busy", "control-plane-cpu", "etcd-writes", "api-requests", GuardReady, GuardLatency:
		return true
	}
	for _, c := range components {
		if m == c+"-cpu" || m == c+"-memory" {
			return true
		}
	}
	return false
}

// Guard metrics: higher is worse for both.
const (
	GuardReady   = "ready-seconds"  // (re)start to a Deployment reachable through its Service
	GuardLatency = "api-latency-ms" // median of API GETs
)

// unit of a metric, by name.
func unit(name string) string {
	switch {
	case name == GuardReady:
		return "s"
	case name == GuardLatency:
		return "ms"
	case strings.HasSuffix(name, "-memory"):
		return "MiB"
	case name == "etcd-writes":
		return "KiB/s"
	case name == "api-requests":
		return "/min"
	}
	return "m"
}

// measure turns a window's summary (and the API server's request rate, negative when unknown) into the
// asked metrics. CPU is millicores; node busy is the summary's (sample.BusyMeter, the one definition every
// verb uses) without tare's own CPU.
func measure(sum summary.Summary, apiPerMin float64, families []string) map[string]float64 {
	if len(families) == 0 {
		families = metricNames
	}
	groups := map[string]summary.Group{}
	for _, g := range sum.Groups {
		groups[g.Name] = g
	}
	out := map[string]float64{}
	for _, f := range families {
		switch f {
		case "node-busy":
			self := 0.0
			if sum.Self != nil {
				self = sum.Self.CPU.Mean
			}
			out["node-busy"] = sum.Reconcile.NodeBusy - self
		case "control-plane-cpu":
			var cp float64
			for _, c := range controlPlane {
				cp += groups[c].CPU.Mean
			}
			out["control-plane-cpu"] = cp
		case "component-cpu":
			for _, c := range components {
				if g, ok := groups[c]; ok {
					out[c+"-cpu"] = g.CPU.Mean
				}
			}
		case "component-memory":
			for _, c := range components {
				if g, ok := groups[c]; ok {
					mem := g.PSS
					if mem == 0 {
						mem = g.RSS
					}
					out[c+"-memory"] = mem / (1 << 20)
				}
			}
		case "etcd-writes":
			if g, ok := groups["etcd"]; ok {
				out["etcd-writes"] = g.WriteBps / 1024
			}
		case "api-requests":
			if apiPerMin >= 0 {
				out["api-requests"] = apiPerMin
			}
		}
	}
	return out
}

// order sorts metric names for tables: the primary first, then node busy, control plane, components,
// memory, writes, requests, guards.
func order(names []string, primary string) []string {
	rank := func(n string) int {
		switch {
		case n == primary:
			return 0
		case n == "node-busy":
			return 1
		case n == "control-plane-cpu":
			return 2
		case strings.HasSuffix(n, "-cpu"):
			return 3
		case strings.HasSuffix(n, "-memory"):
			return 4
		case n == "etcd-writes":
			return 5
		case n == "api-requests":
			return 6
		}
		return 7
	}
	out := slices.Clone(names)
	slices.SortStableFunc(out, func(a, b string) int {
		if d := rank(a) - rank(b); d != 0 {
			return d
		}
		ia, ib := slices.Index(components, strings.TrimSuffix(strings.TrimSuffix(a, "-cpu"), "-memory")), slices.Index(components, strings.TrimSuffix(strings.TrimSuffix(b, "-cpu"), "-memory"))
		if ia != ib {
			return ia - ib
		}
		return strings.Compare(a, b)
	})
	return out
}
