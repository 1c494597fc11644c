package density

import (
	"bytes"
	"context"
	"math"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/tare-dev/tare/internal/fit"
	"github.com/tare-dev/tare/internal/session"
)

// TestTableShowsSpikes renders a report with the spike reservations, the memory and the measured
// allocatable: each section is there, with the figures the report holds.
func TestTableShowsSpikes(t *testing.T) {
	t.Parallel()
	ws := spikyWindows(10, 20)
	s, _, err := SpikeReservations(ws, []string{"kubelet"}, 110, 99, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range ws {
		ws[i].WorkingSet = &WindowMemory{OutsidePeak: 500e6 + float64(ws[i].Pods)*1e6, N: 20}
	}
	m := ReservedMemory(ws, 110, 200e6, 100<<20, "test threshold")
	a := fit.NewAllocatable(fit.Shape{Node: "lab"}, 2000, 8<<30, 110, s.Kube.CPU.Value, m.Kube, s.System.CPU.Value, m.System, m.EvictionHard)
	o := Output{Report: Report{Node: "lab", Steps: ws, Model: Fitted(ws, map[string]string{"kubelet": OutsidePodCgroup}, 1), Spikes: s, Memory: m, Allocatable: &a}}
	var b bytes.Buffer
	if err := o.Table(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"Reserved CPU at the p99 of 1 s demand at 110 pods", "kube-reserved", "system-reserved", "kernel threads",
		"Memory at 110 pods", "test threshold", "Measured allocatable at 110 pods: cpu " + quantity(a.Allocatable, "cpu")} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q", want)
		}
	}
	var j bytes.Buffer
	if err := o.JSON(&j); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"spikes"`, `"memory_reserved"`, `"allocatable"`, `"cpu_series_millicores"`, `"working_set"`} {
		if !strings.Contains(j.String(), want) {
			t.Errorf("JSON lacks %s", want)
		}
	}
}

// TestMeasuredAllocatable builds the document from a report, with the node's shape from a fake API server.
func TestMeasuredAllocatable(t *testing.T) {
	t.Parallel()
	ws := spikyWindows(10, 20)
	s, _, err := SpikeReservations(ws, []string{"kubelet"}, 110, 99, &Churn{Rate: 1, PerStart: []StartCost{{Name: "kubelet", CPUms: 20}}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range ws {
		ws[i].WorkingSet = &WindowMemory{OutsidePeak: 500e6, N: 20}
	}
	m := ReservedMemory(ws, 110, 200e6, 100<<20, "the kubelet's default")
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "lab", Labels: map[string]string{corev1.LabelInstanceTypeStable: "m5.large"}},
		Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{KernelVersion: "6.18.0", OSImage: "Debian", ContainerRuntimeVersion: "containerd://1.6"}}}
	cs := fake.NewClientset(node)
	fn := fit.Node{Name: "lab", Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("8Gi")}}
	o := Options{Image: "pause", Session: session.Options{Version: "v9"}}
	a := measuredAllocatable(context.Background(), cs, fn, o, 110, Report{Spikes: s, Memory: m, Started: time.Now()})
	if a == nil {
		t.Fatal("nil")
	}
	if a.Shape.InstanceType != "m5.large" || a.Shape.Kernel != "6.18.0" || a.Shape.PodImage != "pause" || a.TareVersion != "v9" {
		t.Errorf("shape %+v version %q", a.Shape, a.TareVersion)
	}
	if kube := a.KubeReserved[corev1.ResourceCPU]; kube.MilliValue() != int64(math.Ceil(s.Kube.CPU.Value)) || s.Kube.Churn != 20 {
		t.Errorf("kube-reserved cpu %s, want the p99 %v rounded up (churn %v)", kube.String(), s.Kube.CPU.Value, s.Kube.Churn)
	}
	if !strings.Contains(strings.Join(a.Basis, "\n"), "pod starts at 1/s") {
		t.Errorf("basis %q does not state the churn rate", a.Basis)
	}
	if measuredAllocatable(context.Background(), cs, fn, o, 110, Report{Spikes: s}) != nil {
		t.Error("an allocatable without memory")
	}
}
