package cluster

import (
	"github.com/tare-dev/tare/internal/classify"
	"github.com/tare-dev/tare/internal/component"
	"github.com/tare-dev/tare/internal/summary"
)

// Category is where a group's CPU and memory go in the cluster view.
type Category string

// The categories, in the order the view lists them.
const (
	ControlPlane Category = "control_plane"   // etcd, API server, controller managers, scheduler; k3s
	NodeAgents   Category = "kubelet_runtime" // kubelet, kube-proxy and the runtime's daemon
	PodOverhead  Category = "pod_runtime"     // what the runtime runs per pod: shims, runc, pause, CNI
	Addons       Category = "addons"          // DNS, network daemons, metrics-server, kwok
	Workload     Category = "workload_pods"   // the pods' own processes
	Kernel       Category = "kernel_threads"
	Other        Category = "other"        // processes of no component or pod, and tools (kubectl, etcdctl)
	Tare         Category = "tare"         // the agent itself and any other tare it sees
	OtherNodes   Category = "other_nodes"  // pods of another kubelet on the same kernel (classify.KindForeign)
	Unattributed Category = "unattributed" // node busy no process was credited with
)

// Categories lists every category in order.
var Categories = []Category{ControlPlane, NodeAgents, PodOverhead, Addons, Workload, Kernel, Other, Tare, OtherNodes, Unattributed}

// Title is a category's column heading.
func (c Category) Title() string {
	switch c {
	case ControlPlane:
		return "control plane"
	case NodeAgents:
		return "kubelet+runtime"
	case PodOverhead:
		return "pod runtime"
	case Addons:
		return "add-ons"
	case Workload:
		return "workload pods"
	case Kernel:
		return "kernel threads"
	case OtherNodes:
		return "other nodes' pods"
	}
	return string(c)
}

// machineWide says whether a category is the machine's rather than the node's when nodes share a kernel
// and a PID namespace: every agent then sees the same processes outside pods.
func (c Category) machineWide() bool {
	return c != Workload && c != OtherNodes
}

// categoryOf files a summary group: components by their role in the registry, the rest by kind.
func categoryOf(g summary.Group) Category {
	switch g.Kind {
	case classify.KindPod:
		return Workload
	case classify.KindKernel:
		return Kernel
	case classify.KindSelf:
		return Tare
	case classify.KindForeign:
		return OtherNodes
	case classify.KindComponent:
		if g.Name == "tare" { // another tare: an agent of a node sharing this one's processes, or tare run by hand
			return Tare
		}
		e, ok := component.Lookup(g.Name)
		if !ok {
			return Other
		}
		switch e.Role {
		case component.RoleControlPlane, component.RoleDistribution:
			return ControlPlane
		case component.RoleNode, component.RoleRuntime:
			return NodeAgents
		case component.RolePodRuntime:
			return PodOverhead
		case component.RoleAddon, component.RoleSimulator:
			return Addons
		}
	}
	return Other
}
