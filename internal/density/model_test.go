package density

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/tare-dev/tare/internal/component"
)

func TestOrder(t *testing.T) {
	counts := []int{0, 10, 20, 40}
	steps := Order(counts, 3, rand.New(rand.NewPCG(5, 6)))
	if len(steps) != 12 {
		t.Fatalf("%d steps, want 12", len(steps))
	}
	same := 0
	for trial := 1; trial <= 3; trial++ {
		var got []int
		for _, s := range steps[(trial-1)*4 : trial*4] {
			if s.Trial != trial {
				t.Errorf("step %+v in trial %d's block", s, trial)
			}
			got = append(got, s.Pods)
		}
		if slices.Equal(got, counts) {
			same++
		}
		slices.Sort(got)
		if !slices.Equal(got, counts) {
			t.Errorf("trial %d steps %v: want every count once", trial, got)
		}
	}
	if same == 3 {
		t.Error("no trial was shuffled")
	}
}

func TestCheckCounts(t *testing.T) {
	for _, tc := range []struct {
		counts           []int
		maxPods, running int
		want             string
	}{
		{[]int{0, 10}, 110, 5, ""},
		{[]int{5}, 0, 0, "at least two"},
		{[]int{-1, 2}, 0, 0, "negative"},
		{[]int{0, 4, 4}, 0, 0, "must increase"},
		{[]int{0, 100}, 110, 20, "exceed its maxPods (110)"},
	} {
		err := CheckCounts(tc.counts, tc.maxPods, tc.running)
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("CheckCounts(%v, %d, %d) = %v, want %q", tc.counts, tc.maxPods, tc.running, err, tc.want)
		}
	}
}

// TestFittedOverhead: the per-pod overhead sums the upper ends of the components outside the pod cgroups
// that work for the node's pods (shim, kubelet), not what the pod cgroup already sees (pause) nor the
// control plane; a group missing from a window counts as zero there.
func TestFittedOverhead(t *testing.T) {
	const mib = 1 << 20
	var ws []Window
	for _, n := range []int{0, 2, 4, 0, 2, 4} {
		g := map[string]Cost{
			component.Kubelet:   {CPU: 10 + 0.5*float64(n), Private: 50 * mib},
			component.APIServer: {CPU: 20 + 1*float64(n)},
		}
		if n > 0 {
			g[component.ContainerdShim] = Cost{CPU: 0.2 * float64(n), Private: 3 * mib * float64(n)}
			g[component.Pause] = Cost{Private: 1 * mib * float64(n)}
		}
		ws = append(ws, Window{Step: Step{Pods: n}, Busy: 40 + 2*float64(n), Groups: g})
	}
	charged := map[string]string{component.Kubelet: OutsidePodCgroup, component.APIServer: OutsidePodCgroup,
		component.ContainerdShim: OutsidePodCgroup, component.Pause: InPodCgroup}
	m := Fitted(ws, charged, 1)
	if math.Abs(m.Busy.Marginal-2) > 1e-9 || math.Abs(m.Busy.Fixed-40) > 1e-9 {
		t.Errorf("node busy %+v: want 40 + 2/pod", m.Busy)
	}
	shim, _ := m.Component(component.ContainerdShim)
	if math.Abs(shim.Private.Marginal-3*mib) > 1e-3 || shim.Private.Fixed != 0 || math.Abs(shim.CPU.Marginal-0.2) > 1e-9 {
		t.Errorf("shim %+v: want 3 MiB and 0.2m per pod from zero", shim)
	}
	if want := []string{component.ContainerdShim, component.Kubelet}; !slices.Equal(sorted(m.OverheadFrom), want) {
		t.Errorf("overhead from %v, want %v", m.OverheadFrom, want)
	}
	if math.Abs(m.Overhead.CPU-0.7) > 1e-9 || math.Abs(m.Overhead.Private-3*mib) > 1e-3 || math.Abs(m.OverheadCPU.Fixed-10) > 1e-9 {
		t.Errorf("overhead %+v (cpu fit %+v): want 10m + 0.7m and 3 MiB per pod (exact lines: zero-width intervals)", m.Overhead, m.OverheadCPU)
	}
	// One pod count only (a run cut short): no overhead, no RuntimeClass.
	if one := Fitted(ws[:1], charged, 1); !math.IsNaN(one.Overhead.CPU) || RuntimeClass("x", "runc", one) != nil {
		t.Errorf("one window: overhead %+v: want NaN and no RuntimeClass", one.Overhead)
	}
	rc := RuntimeClass("measured", "runc", m)
	cpu, mem := rc.Overhead.PodFixed[corev1.ResourceCPU], rc.Overhead.PodFixed[corev1.ResourceMemory]
	if cpu.String() != "1m" || mem.String() != "3Mi" || rc.Handler != "runc" || rc.Name != "measured" {
		t.Errorf("RuntimeClass %s/%s cpu %s memory %s: want 1m (0.7m rounded up) and 3Mi", rc.Name, rc.Handler, cpu.String(), mem.String())
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// TestOutputTable: the table names every component with its cgroup, the per-pod overhead and a RuntimeClass
// kubectl can read; a component with nothing measured is left out.
func TestOutputTable(t *testing.T) {
	const mib = 1 << 20
	var ws []Window
	for _, n := range []int{0, 5, 10} {
		ws = append(ws, Window{Step: Step{Trial: 1, Pods: n}, Busy: 30 + float64(n), Groups: map[string]Cost{
			component.ContainerdShim: {CPU: 0.1 * float64(n), Private: 2.5 * mib * float64(n)},
			"idle":                   {},
		}})
	}
	m := Fitted(ws, map[string]string{component.ContainerdShim: OutsidePodCgroup}, 1)
	out := Output{Report: Report{Node: "n1", Image: "pause", Counts: []int{0, 5, 10}, Trials: 1, Window: "20s", Took: "1m", Steps: ws, Model: m},
		RuntimeClass: RuntimeClass("tare-measured", "runc", m)}
	var b strings.Builder
	if err := out.Table(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Node n1: [0 5 10] idle pods of pause", "Node busy: 30.00m at 0 pods, 1.00m per pod",
		"containerd-shim  outside the pod cgroups", "2.50 MiB [2.50 MiB, 2.50 MiB]", "kind: RuntimeClass", "handler: runc",
		"cpu: 1m", "memory: 3Mi"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "idle ") && strings.Contains(b.String(), "\nidle") {
		t.Errorf("a component with nothing measured is listed:\n%s", b.String())
	}
}
