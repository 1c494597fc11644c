package compare

import (
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tare-dev/tare/internal/stats"
	"github.com/tare-dev/tare/internal/summary"
)

func podProcess(uid, ns, name, group string, cpu, kids, pss, rss float64) summary.Process {
	return summary.Process{Group: group, PodUID: uid, PodNS: ns, PodName: name, CPU: stats.Summary{Mean: cpu}, ChildrenCPU: kids,
		Memory: summary.Memory{PSS: pss, RSS: rss}}
}

func TestDaemonSetCost(t *testing.T) {
	t.Parallel()
	const mib = 1 << 20
	sum := summary.Summary{Processes: []summary.Process{
		{Group: "kubelet", CPU: stats.Summary{Mean: 500}},
		podProcess("uid-a", "ns", "a", "pod uid-a", 10, 2, 20*mib, 30*mib),
		podProcess("", "ns", "b", "pod ns/b", 6, 0, 0, 10*mib),                        // known by name only; no PSS: RSS
		podProcess("uid-c", "ns", "c", "tare", 2, 0, 3*mib, 4*mib),                    // a registered component in a pod (tare's agent)
		podProcess("uid-c", "ns", "c", "tare", 1, 0, 1*mib, 1*mib),                    // a second process of that pod
		podProcess("uid-other", "ns", "o", "pod uid-other", 100, 0, 100*mib, 100*mib), // not the DaemonSet's
	}}
	pods := []DaemonSetPod{
		{UID: "uid-a", Namespace: "ns", Name: "a", Node: "node-1"},
		{UID: "uid-b", Namespace: "ns", Name: "b", Node: "node-2"},
		{UID: "uid-c", Namespace: "ns", Name: "c", Node: "node-2"}, // a second DaemonSet's pod on node-2
		{UID: "uid-k", Namespace: "ns", Name: "k", Node: "kwok-1"}, // no process here
	}
	got, err := DaemonSetCost(sum, pods)
	if err != nil {
		t.Fatal(err)
	}
	cpu, mem := 12.0+6+3, 20.0+10+4
	want := map[string]float64{
		DaemonSetPodCPU: cpu / 3, DaemonSetPodMemory: mem / 3,
		DaemonSetNodeCPU: cpu / 2, DaemonSetNodeMemory: mem / 2,
		DaemonSetPods: 3,
	}
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b float64) bool { return math.Abs(a-b) < 1e-9 })); diff != "" {
		t.Fatalf("cost (-want +got):\n%s", diff)
	}
	for m := range got {
		if !KnownPrimary(m) || Unit(m) == "" {
			t.Errorf("metric %s: known primary %v, unit %q", m, KnownPrimary(m), Unit(m))
		}
	}
	if !KnownFamily("daemonset") {
		t.Error("daemonset is not a known family")
	}
	if _, err := DaemonSetCost(sum, pods[3:]); err == nil || !strings.Contains(err.Error(), "none of the DaemonSet's 1 pods") {
		t.Errorf("no pod measured: %v", err)
	}
	if z := NoDaemonSet(); len(z) != len(want) || z[DaemonSetNodeCPU] != 0 {
		t.Errorf("NoDaemonSet %v: want every metric of the family at 0", z)
	}
}

func TestOrderDaemonSet(t *testing.T) {
	t.Parallel()
	got := Order([]string{"kubelet-cpu", DaemonSetPods, "node-busy", DaemonSetPodCPU, DaemonSetNodeCPU, APIWatches, "api-requests"}, "node-busy")
	want := []string{"node-busy", DaemonSetNodeCPU, DaemonSetPodCPU, DaemonSetPods, "kubelet-cpu", "api-requests", APIWatches}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("order (-want +got):\n%s", diff)
	}
}

// A change from a baseline of zero is shown as the shift in the metric's unit, not as a percentage.
func TestChangeTextZeroBaseline(t *testing.T) {
	t.Parallel()
	c := Cell{DeltaPct: Num(math.NaN()), LoPct: Num(math.NaN()), HiPct: Num(math.NaN()),
		Shift: &stats.Shift{P: 0.021, Significant: true, Estimate: 1.338, Lo: 1.171, Hi: 2.103}}
	if got, want := ChangeText(c), "+1.338 [+1.171, +2.103] p=0.021"; got != want {
		t.Errorf("ChangeText %q, want %q", got, want)
	}
	c = Cell{DeltaPct: 12.5, LoPct: 3, HiPct: 20, Shift: &stats.Shift{P: 0.03, Significant: true}}
	if got, want := ChangeText(c), "+12.5% [+3.0%, +20.0%] p=0.030"; got != want {
		t.Errorf("ChangeText %q, want %q", got, want)
	}
}
