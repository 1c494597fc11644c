package promread

import (
	"cmp"
	"errors"
	"math"
	"slices"

	"github.com/prometheus/common/model"

	"github.com/tare-dev/tare/internal/output"
	"github.com/tare-dev/tare/internal/warning"
)

// ErrNoAgents means Prometheus holds no tare agent series in the window: no agent was scraped.
var ErrNoAgents = errors.New("no tare agent was scraped")

// Results are the vectors the Queries returned, field by field.
type Results struct {
	CPUs, Busy, Overhead, KubeletRuntime, Self, Groups, Memory, ControlPlane, Pods model.Vector
	First, Samples                                                                 model.Vector // see Queries
}

// Map builds the figures of a Report from query results; the caller fills in where and when they were read.
// It returns ErrNoAgents when no node reported its CPUs.
func Map(r Results) (Report, error) {
	if len(r.CPUs) == 0 {
		return Report{}, ErrNoAgents
	}
	var rep Report
	byNode := map[string]*Node{}
	node := func(name string) *Node {
		n, ok := byNode[name]
		if !ok {
			n = &Node{Name: name}
			byNode[name] = n
		}
		return n
	}
	for _, s := range r.CPUs {
		node(nodeOf(s)).CPUs = value(s)
	}
	perNode(r.Busy, node, func(n *Node, v float64) { n.BusyCores = v })
	perNode(r.Overhead, node, func(n *Node, v float64) { n.OverheadCores = v })
	perNode(r.KubeletRuntime, node, func(n *Node, v float64) { n.KubeletRuntimeCores = v })
	perNode(r.Self, node, func(n *Node, v float64) { n.TareCores = v })
	mapGroups(r.Groups, r.Memory, node)

	for _, n := range byNode {
		n.BusyPercent = output.Percent(n.BusyCores, n.CPUs)
		slices.SortFunc(n.Groups, func(a, b Group) int {
			return cmp.Or(cmp.Compare(b.CPUCores, a.CPUCores), cmp.Compare(a.Name, b.Name), cmp.Compare(a.Kind, b.Kind))
		})
		rep.Nodes = append(rep.Nodes, *n)
		rep.Cluster.BusyCores += n.BusyCores
		rep.Cluster.OverheadCores += n.OverheadCores
	}
	slices.SortFunc(rep.Nodes, func(a, b Node) int { return cmp.Compare(a.Name, b.Name) })
	rep.Cluster.Nodes = len(rep.Nodes)
	for _, s := range r.ControlPlane {
		rep.Cluster.ControlPlaneCores += value(s)
	}
	rep.Cluster.Pods = mapPods(r.Pods)
	if _, ok := byNode[""]; ok {
		rep.Warnings = append(rep.Warnings, warning.Warning{Code: WarnNoNodeLabel, Figure: "nodes",
			Message: "some agent series have no node label: scrape them with the relabelling " +
				"of deploy/prometheus/prometheus.yml (__meta_kubernetes_pod_node_name to node)",
			Cause: "a scrape configuration without the relabelling; those series are in no node's figures"})
	}
	return rep, nil
}

func perNode(v model.Vector, node func(string) *Node, set func(*Node, float64)) {
	for _, s := range v {
		set(node(nodeOf(s)), value(s))
	}
}

func mapGroups(cpu, mem model.Vector, node func(string) *Node) {
	type key struct{ node, group, kind string }
	groups := map[key]*Group{}
	group := func(s *model.Sample) *Group {
		k := key{nodeOf(s), string(s.Metric["group"]), string(s.Metric["group_kind"])}
		g, ok := groups[k]
		if !ok {
			g = &Group{Name: k.group, Kind: k.kind}
			groups[k] = g
		}
		return g
	}
	for _, s := range cpu {
		group(s).CPUCores = value(s)
	}
	for _, s := range mem {
		g := group(s)
		if g.Memory == nil {
			g.Memory = map[string]int64{}
		}
		g.Memory[string(s.Metric["memory"])] = int64(math.Round(value(s)))
	}
	for k, g := range groups {
		n := node(k.node)
		n.Groups = append(n.Groups, *g)
	}
}

func mapPods(v model.Vector) []Pod {
	pods := make([]Pod, 0, len(v))
	for _, s := range v {
		pods = append(pods, Pod{Node: nodeOf(s), Namespace: string(s.Metric["namespace"]), Pod: string(s.Metric["pod"]),
			CPUCores: value(s)})
	}
	slices.SortFunc(pods, func(a, b Pod) int {
		return cmp.Or(cmp.Compare(b.CPUCores, a.CPUCores), cmp.Compare(a.Node, b.Node),
			cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Pod, b.Pod))
	})
	return pods
}

func nodeOf(s *model.Sample) string { return string(s.Metric["node"]) }

// value is the sample's value, with NaN (a rate over a counter that did not move in an empty window) as 0.
func value(s *model.Sample) float64 {
	v := float64(s.Value)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return v
}
