package compare

import (
	"fmt"

	"github.com/tare-dev/tare/internal/summary"
)

// The daemonset family is what the DaemonSets an experiment's variant installs cost: their pods' CPU and
// memory, per pod and per node that runs one. A variant without a DaemonSet reports zeros (it runs no
// such pod), so that the difference from the baseline is the cost, with its interval.
const (
	DaemonSetPodCPU     = "daemonset-pod-cpu"     // millicores per pod
	DaemonSetPodMemory  = "daemonset-pod-memory"  // MiB per pod (PSS, RSS where PSS is unknown)
	DaemonSetNodeCPU    = "daemonset-node-cpu"    // millicores per node that runs a pod
	DaemonSetNodeMemory = "daemonset-node-memory" // MiB per node that runs a pod
	DaemonSetPods       = "daemonset-pods"        // pods measured (their processes seen on this machine)
)

// daemonSetMetrics are the family's metrics, in the order tables show them.
var daemonSetMetrics = []string{DaemonSetNodeCPU, DaemonSetNodeMemory, DaemonSetPodCPU, DaemonSetPodMemory, DaemonSetPods}

// DaemonSetPod is one pod of a DaemonSet a variant installed, as the API server lists it.
type DaemonSetPod struct {
	UID, Namespace, Name, Node string
}

// NoDaemonSet is the daemonset family of a variant that installs no DaemonSet: zero pods, zero cost.
func NoDaemonSet() map[string]float64 {
	out := map[string]float64{}
	for _, m := range daemonSetMetrics {
		out[m] = 0
	}
	return out
}

// DaemonSetCost is the daemonset family of a window's summary: the CPU (millicores, short-lived children
// included) and memory (MiB: PSS, RSS where PSS is unknown) of the processes of the pods, found by their
// pod UID (or namespace and name), whatever group they were put in (tare's own agent is the component
// "tare", not a pod group), summed and divided by the pods measured and by the nodes they run on. A pod
// with no process in the summary ran none on the measured machine (a kwok node's): it counts in neither.
// It fails when none of the pods was measured.
func DaemonSetCost(sum summary.Summary, pods []DaemonSetPod) (map[string]float64, error) {
	type use struct{ cpu, mem float64 }
	byUID, byName := map[string]*use{}, map[string]*use{}
	for _, p := range sum.Processes {
		m := p.PSS
		if m == 0 {
			m = p.RSS
		}
		for _, k := range []struct {
			m   map[string]*use
			key string
		}{{byUID, p.PodUID}, {byName, p.PodNS + "/" + p.PodName}} {
			if k.key == "" || k.key == "/" {
				continue
			}
			u := k.m[k.key]
			if u == nil {
				u = &use{}
				k.m[k.key] = u
			}
			u.cpu += p.CPU.Mean + p.ChildrenCPU
			u.mem += m
		}
	}
	var cpu, mem float64
	measured := 0
	nodes := map[string]bool{}
	for _, p := range pods {
		u, ok := byUID[p.UID]
		if !ok {
			u, ok = byName[p.Namespace+"/"+p.Name]
		}
		if !ok {
			continue
		}
		measured++
		nodes[p.Node] = true
		cpu += u.cpu
		mem += u.mem / (1 << 20)
	}
	if measured == 0 {
		return nil, fmt.Errorf("none of the DaemonSet's %d pods ran a process tare saw in the window: are they on this machine's node?", len(pods))
	}
	n, k := float64(measured), float64(len(nodes))
	return map[string]float64{
		DaemonSetPodCPU: cpu / n, DaemonSetPodMemory: mem / n,
		DaemonSetNodeCPU: cpu / k, DaemonSetNodeMemory: mem / k,
		DaemonSetPods: n,
	}, nil
}
