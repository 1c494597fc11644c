package cluster

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/tare-dev/tare/internal/classify"
	"github.com/tare-dev/tare/internal/sample"
	"github.com/tare-dev/tare/internal/stats"
	"github.com/tare-dev/tare/internal/summary"
)

// fakeNode is one agent's summary, made of the figures a test states.
type fakeNode struct {
	boot, pidns string
	busy, self  float64
	groups      []summary.Group
}

func group(name, kind string, mc, pss float64) summary.Group {
	return summary.Group{Name: name, Kind: kind, CPU: stats.Summary{N: 30, Mean: mc}, Memory: summary.Memory{PSS: pss}}
}

func (f fakeNode) summary() *summary.Summary {
	var groups float64
	for _, g := range f.groups {
		groups += g.CPU.Mean
	}
	return &summary.Summary{
		Meta:   sample.Meta{BootID: f.boot, PIDNamespace: f.pidns, Interval: time.Second},
		Window: summary.Window{Seconds: 30, Intervals: 30},
		Node:   summary.Node{CPUs: 2, Busy: stats.Summary{N: 30, Mean: f.busy, P95: f.busy * 1.2}},
		Groups: f.groups,
		Self:   &summary.Process{Memory: summary.Memory{PSS: 20e6}},
		Reconcile: summary.Reconciliation{NodeBusy: f.busy, Groups: groups, Self: f.self,
			Unattributed: f.busy - groups - f.self, Resolution: 2},
	}
}

func near(t *testing.T, what string, got, want float64) {
	t.Helper()
	if math.Abs(got-want) > 1e-9 {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

// TestBuildSeparateMachines: two nodes on their own kernels and one without an agent. Every figure is
// the sum of the nodes', per pod is the pod runtime's CPU over the running pods, and the missing node is
// a row that says so.
func TestBuildSeparateMachines(t *testing.T) {
	t.Parallel()
	a := fakeNode{boot: "boot-a", pidns: "pid:[1]", busy: 500, self: 8, groups: []summary.Group{
		group("etcd", classify.KindComponent, 100, 50e6), group("kubelet", classify.KindComponent, 50, 40e6),
		group("containerd", classify.KindComponent, 20, 30e6), group("containerd-shim", classify.KindComponent, 10, 8e6),
		group("pause", classify.KindComponent, 2, 1e6), group("pod default/x", classify.KindPod, 200, 100e6),
		group("kernel threads", classify.KindKernel, 30, 0), group("other", classify.KindOther, 40, 70e6)}}
	b := fakeNode{boot: "boot-b", pidns: "pid:[1]", busy: 300, self: 6, groups: []summary.Group{
		group("kubelet", classify.KindComponent, 45, 38e6), group("containerd-shim", classify.KindComponent, 12, 9e6),
		group("coredns", classify.KindComponent, 5, 20e6), group("pod default/y", classify.KindPod, 150, 80e6)}}
	in := []Input{
		{Node: "b", Pods: 2, Agent: "tare-agent-b", Status: StatusOK, Summary: b.summary()},
		{Node: "c", Status: StatusNoAgent, Reason: "no agent pod on this node"},
		{Node: "a", Roles: []string{"control-plane"}, Pods: 4, Agent: "tare-agent-a", Status: StatusOK, Summary: a.summary()},
	}
	v := Build(30*time.Second, time.Now(), in)
	if names := []string{v.Nodes[0].Name, v.Nodes[1].Name, v.Nodes[2].Name}; !slices.Equal(names, []string{"a", "b", "c"}) {
		t.Errorf("rows %v, want sorted by name", names)
	}
	if v.Nodes[2].Status != StatusNoAgent || v.Nodes[2].Reason == "" {
		t.Errorf("node c: %+v, want no-agent with its reason", v.Nodes[2])
	}
	if len(v.SharedKernels) != 0 {
		t.Errorf("shared kernels %v on two boot IDs", v.SharedKernels)
	}
	tot := v.Totals
	if tot.Nodes != 3 || tot.Measured != 2 || tot.Kernels != 2 || tot.Pods != 6 || tot.CPUs != 4 {
		t.Errorf("totals %+v, want 3 nodes, 2 measured on 2 kernels, 6 pods, 4 CPUs", tot)
	}
	near(t, "busy", tot.Busy, 800)
	near(t, "control plane", tot.CPU[ControlPlane], 100)
	near(t, "kubelet+runtime", tot.CPU[NodeAgents], 50+20+45)
	near(t, "pod runtime", tot.CPU[PodOverhead], 10+2+12)
	near(t, "add-ons", tot.CPU[Addons], 5)
	near(t, "workload", tot.CPU[Workload], 350)
	near(t, "tare", tot.CPU[Tare], 14)
	near(t, "per pod", tot.PerPod.CPU, (10+2+12)/6.0)
	near(t, "per pod memory", tot.PerPod.Memory, (8e6+1e6+9e6)/6)
	near(t, "node a per pod", v.Nodes[0].PerPod.CPU, 12/4.0)
	near(t, "control plane memory", tot.Memory[ControlPlane], 50e6)
	// groups + tare + unattributed = busy, on each node and for the cluster.
	near(t, "unattributed", tot.CPU[Unattributed], 800-(452+8)-(212+6))
	near(t, "node a unattributed", v.Nodes[0].CPU[Unattributed], 500-452-8)
	near(t, "resolution", tot.Resolution, 4)
}

// TestBuildOneMachineSharedProcesses: three nodes of a one-machine lab share a kernel and a PID namespace:
// each agent sees every node's processes outside pods and the other nodes' pods as foreign. The cluster
// counts the machine's busy and what is outside pods once, each node's own pods and agent once.
func TestBuildOneMachineSharedProcesses(t *testing.T) {
	t.Parallel()
	work := []float64{10, 200, 30} // each node's own pods
	var in []Input
	for i, name := range []string{"n1", "n2", "n3"} {
		foreign := work[0] + work[1] + work[2] - work[i]
		f := fakeNode{boot: "boot", pidns: "pid:[4026531836]", busy: 900 + float64(i), self: 5 + float64(i), groups: []summary.Group{
			group("etcd", classify.KindComponent, 100, 50e6), group("kubelet", classify.KindComponent, 150, 120e6),
			group("containerd-shim", classify.KindComponent, 30, 24e6), group("kernel threads", classify.KindKernel, 20, 0),
			group("pod default/w", classify.KindPod, work[i], 10e6), group(classify.ForeignGroup, classify.KindForeign, foreign, 20e6)}}
		in = append(in, Input{Node: name, Pods: 2, Agent: "agent-" + name, Status: StatusOK, Summary: f.summary()})
	}
	v := Build(30*time.Second, time.Now(), in)
	if len(v.SharedKernels) != 1 || !v.SharedKernels[0].SharedProcesses || len(v.SharedKernels[0].Nodes) != 3 {
		t.Fatalf("shared kernels %+v, want the three nodes sharing processes", v.SharedKernels)
	}
	if got := v.Nodes[1].SharesWith; !slices.Equal(got, []string{"n1", "n3"}) {
		t.Errorf("n2 shares with %v", got)
	}
	tot := v.Totals
	if tot.Kernels != 1 || tot.CPUs != 2 || tot.Pods != 6 {
		t.Errorf("totals %+v, want one kernel of 2 CPUs and 6 pods", tot)
	}
	near(t, "busy", tot.Busy, 900)
	near(t, "control plane", tot.CPU[ControlPlane], 100)
	near(t, "kubelet+runtime", tot.CPU[NodeAgents], 150)
	near(t, "workload", tot.CPU[Workload], 240)
	near(t, "other nodes", tot.CPU[OtherNodes], 0)
	near(t, "tare", tot.CPU[Tare], 5+6+7)
	near(t, "per pod", tot.PerPod.CPU, 30/6.0)
	near(t, "n2 per pod", v.Nodes[1].PerPod.CPU, 30/6.0)
	near(t, "unattributed", tot.CPU[Unattributed], 900-100-150-30-20-240-18)
	near(t, "n2 other nodes", v.Nodes[1].CPU[OtherNodes], 40)
}

// TestBuildSharedKernelOwnProcesses: nodes that are containers on one machine (kind) share the kernel but
// not the processes: busy counts once, everything else adds up.
func TestBuildSharedKernelOwnProcesses(t *testing.T) {
	t.Parallel()
	var in []Input
	for i, name := range []string{"k1", "k2"} {
		f := fakeNode{boot: "boot", pidns: "pid:[" + name + "]", busy: 700, self: 4, groups: []summary.Group{
			group("kubelet", classify.KindComponent, 60, 50e6), group("pod default/w", classify.KindPod, 100*float64(i+1), 10e6)}}
		in = append(in, Input{Node: name, Pods: 1, Status: StatusOK, Summary: f.summary()})
	}
	v := Build(time.Minute, time.Now(), in)
	if len(v.SharedKernels) != 1 || v.SharedKernels[0].SharedProcesses {
		t.Fatalf("shared kernels %+v, want one kernel without shared processes", v.SharedKernels)
	}
	near(t, "busy", v.Totals.Busy, 700)
	near(t, "kubelet+runtime", v.Totals.CPU[NodeAgents], 120)
	near(t, "workload", v.Totals.CPU[Workload], 300)
	near(t, "tare", v.Totals.CPU[Tare], 8)
	near(t, "unattributed", v.Totals.CPU[Unattributed], 700-120-300-8)
}
