package promread

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/tare-dev/tare/internal/classify"
	"github.com/tare-dev/tare/internal/component"
)

// Metric names of the agent's metrics contract that the queries read.
const (
	metricCPUs     = "tare_node_cpus"
	metricBusy     = "tare_node_busy_cpu_seconds_total"
	metricGroupCPU = "tare_group_cpu_seconds_total"
	metricGroupMem = "tare_group_memory_bytes"
	metricSelfCPU  = "tare_self_cpu_seconds_total"
)

// Queries are the PromQL expressions a Report is built from, for one window and node filter. CPU
// expressions give cores (CPU seconds per second) averaged over the window; memory is the last value.
type Queries struct {
	CPUs           string // max by (node): online CPUs seen in the window; also tells which nodes have agents
	Busy           string // sum by (node): node busy
	Overhead       string // sum by (node): components, kernel and tare
	KubeletRuntime string // sum by (node): node agents and the container runtime
	Self           string // sum by (node): tare's own CPU
	Groups         string // sum by (node, group, group_kind): every group's CPU
	Memory         string // sum by (node, group, group_kind, memory): every group's memory
	ControlPlane   string // sum: the control plane's components, wherever they run
	Pods           string // sum by (node, namespace, pod): every pod's CPU
	// First and Samples say how much of the window each node's samples cover: the time of its first
	// sample in the window (to the subquery's step) and how many samples the window holds.
	First, Samples string
}

// overheadKinds are the group kinds a node costs before any workload.
var overheadKinds = []string{classify.KindComponent, classify.KindKernel, classify.KindSelf}

// ControlPlaneGroups are the groups counted as the control plane: the control-plane components of tare's
// registry.
func ControlPlaneGroups() []string {
	return component.Names(func(e component.Entry) bool { return e.Role == component.RoleControlPlane })
}

// KubeletRuntimeGroups are the groups counted as the node's agents and container runtime.
func KubeletRuntimeGroups() []string {
	return component.Names(func(e component.Entry) bool {
		switch e.Role {
		case component.RoleNode, component.RoleRuntime, component.RolePodRuntime:
			return true
		}
		return false
	})
}

// Build returns the queries for a window (at least a second) and a node ("" for every node).
func Build(window time.Duration, node string) Queries {
	w := model.Duration(window).String()
	sel := func(metric string, matchers ...string) string {
		if node != "" {
			matchers = append(matchers, fmt.Sprintf("node=%q", node))
		}
		if len(matchers) == 0 {
			return metric
		}
		return metric + "{" + strings.Join(matchers, ",") + "}"
	}
	rate := func(s string) string { return "rate(" + s + "[" + w + "])" }
	component := fmt.Sprintf("group_kind=%q", classify.KindComponent)
	return Queries{
		CPUs:     "max by (node) (max_over_time(" + sel(metricCPUs) + "[" + w + "]))",
		Busy:     "sum by (node) (" + rate(sel(metricBusy)) + ")",
		Overhead: "sum by (node) (" + rate(sel(metricGroupCPU, oneOf("group_kind", overheadKinds))) + ")",
		KubeletRuntime: "sum by (node) (" +
			rate(sel(metricGroupCPU, component, oneOf("group", KubeletRuntimeGroups()))) + ")",
		Self:         "sum by (node) (" + rate(sel(metricSelfCPU)) + ")",
		Groups:       "sum by (node, group, group_kind) (" + rate(sel(metricGroupCPU)) + ")",
		Memory:       "sum by (node, group, group_kind, memory) (" + sel(metricGroupMem) + ")",
		ControlPlane: "sum(" + rate(sel(metricGroupCPU, component, oneOf("group", ControlPlaneGroups()))) + ")",
		Pods: "sum by (node, namespace, pod) (" +
			rate(sel(metricGroupCPU, fmt.Sprintf("group_kind=%q", classify.KindPod))) + ")",
		First:   "min by (node) (min_over_time(timestamp(" + sel(metricCPUs) + ")[" + w + ":" + coverageStep(window).String() + "]))",
		Samples: "max by (node) (count_over_time(" + sel(metricCPUs) + "[" + w + "]))",
	}
}

// coverageStep is the First query's resolution: a hundredth of the window, at least a second.
func coverageStep(window time.Duration) model.Duration {
	return model.Duration(max(time.Second, (window / 100).Truncate(time.Second)))
}

// oneOf is a regular-expression matcher for any of the values, which are plain names.
func oneOf(label string, values []string) string {
	return fmt.Sprintf("%s=~%q", label, strings.Join(slices.Clone(values), "|"))
}
