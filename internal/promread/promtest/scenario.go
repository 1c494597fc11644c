package promtest

import "fmt"

// Node is one fake agent of a scenario: its node, the labels the shipped relabelling would give its target,
// and the rates its counters advance at, which are the ground truth a test compares with.
type Node struct {
	Name   string
	CPUs   float64
	Busy   float64 // cores
	Groups []Group
}

// Group is one group the fake agent exports.
type Group struct {
	Name, Kind, Namespace, Pod, Container string
	Cores                                 float64
	Memory                                map[string]float64 // bytes by kind: rss, pss, private
}

// TwoNodes is the scenario the Prometheus tests share: a control-plane node and a worker, with pods on
// both. Rates are cores; every figure of a report over it can be worked out by hand:
//
//	n1: busy 0.75 of 2 CPUs (37.5%); overhead kubelet 0.15 + containerd 0.05 + etcd 0.2 + kernel 0.02 +
//	    tare 0.01 = 0.43; kubelet+runtime 0.2; tare 0.01; pod default/burner 0.25
//	n2: busy 0.3 of 4 CPUs (7.5%); overhead kubelet 0.08 + kube-apiserver 0.12 = 0.2; kubelet+runtime 0.08;
//	    pod kube-system/coredns-1 0.04
//	cluster: busy 1.05, overhead 0.63, control plane etcd 0.2 + kube-apiserver 0.12 = 0.32
var TwoNodes = []Node{
	{Name: "n1", CPUs: 2, Busy: 0.75, Groups: []Group{
		{Name: "kubelet", Kind: "component", Cores: 0.15,
			Memory: map[string]float64{"rss": 50 << 20, "pss": 40 << 20, "private": 30 << 20}},
		{Name: "containerd", Kind: "component", Cores: 0.05},
		{Name: "etcd", Kind: "component", Cores: 0.2},
		{Name: "kernel", Kind: "kernel", Cores: 0.02},
		{Name: "tare", Kind: "self", Cores: 0.01, Memory: map[string]float64{"rss": 20 << 20}},
		{Name: "burner", Kind: "pod", Namespace: "default", Pod: "burner", Container: "burn", Cores: 0.25},
	}},
	{Name: "n2", CPUs: 4, Busy: 0.3, Groups: []Group{
		{Name: "kubelet", Kind: "component", Cores: 0.08},
		{Name: "kube-apiserver", Kind: "component", Cores: 0.12},
		{Name: "coredns-1", Kind: "pod", Namespace: "kube-system", Pod: "coredns-1", Container: "coredns", Cores: 0.04},
	}},
}

// TargetLabels are the labels the shipped relabelling gives the agent's target on node: its node, and the
// agent pod's namespace and name.
func (n Node) TargetLabels() map[string]string {
	return map[string]string{"node": n.Name, "namespace": "tare", "pod": "tare-agent-" + n.Name}
}

// Series are the metrics of the agent contract the fake agent on n exposes. Counters start high, as an
// agent's that has run for a while, so that Prometheus's rate never extrapolates them down to zero.
func (n Node) Series() []Series {
	const start = 1000
	s := []Series{
		{Name: "tare_agent_info", Labels: fmt.Sprintf(`node=%q,version="test",reference="proc-stat",cpu_source="proc",kernel="6.1"`, n.Name), Start: 1, Gauge: true},
		{Name: "tare_node_cpus", Start: n.CPUs, Gauge: true},
		{Name: "tare_node_busy_cpu_seconds_total", Labels: `reference="proc-stat"`, Start: start, Rate: n.Busy},
	}
	unattributed := n.Busy
	for _, g := range n.Groups {
		unattributed -= g.Cores
	}
	s = append(s, Series{Name: "tare_unattributed_cpu_cores", Start: unattributed, Gauge: true},
		Series{Name: "tare_reconciliation_resolution_cores", Start: 0.01, Gauge: true})
	for _, g := range n.Groups {
		labels := fmt.Sprintf(`group=%q,group_kind=%q,namespace=%q,pod=%q,container=%q`, g.Name, g.Kind, g.Namespace, g.Pod, g.Container)
		s = append(s, Series{Name: "tare_group_cpu_seconds_total", Labels: labels, Start: start, Rate: g.Cores})
		if g.Kind == "self" {
			s = append(s, Series{Name: "tare_self_cpu_seconds_total", Start: start, Rate: g.Cores})
		}
		for kind, v := range g.Memory {
			s = append(s, Series{Name: "tare_group_memory_bytes", Gauge: true, Start: v,
				Labels: fmt.Sprintf(`group=%q,group_kind=%q,namespace=%q,pod=%q,memory=%q`, g.Name, g.Kind, g.Namespace, g.Pod, kind)})
		}
	}
	return s
}
