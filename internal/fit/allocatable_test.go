package fit

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func sampleAllocatable() Allocatable {
	a := NewAllocatable(Shape{Node: "lab", OSImage: "Debian", Kernel: "6.18", ContainerRuntime: "containerd://1.6", PodImage: "pause"},
		2000, 8<<30, 110, 61.2, 300<<20, 20.5, 700<<20, 100<<20)
	a.Measured, a.TareVersion, a.Basis = time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC), "dev", []string{"cpu at p99"}
	return a
}

// TestAllocatableArithmetic checks allocatable = capacity − reservations − eviction against the same sum
// done on the document's own quantities.
func TestAllocatableArithmetic(t *testing.T) {
	t.Parallel()
	a := sampleAllocatable()
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		want := a.Capacity[r].DeepCopy()
		want.Sub(a.KubeReserved[r])
		want.Sub(a.SystemReserved[r])
		if e, ok := a.EvictionHard[r]; ok {
			want.Sub(e)
		}
		if got := a.Allocatable[r]; got.Cmp(want) != 0 {
			t.Errorf("allocatable %s %s, want %s", r, got.String(), want.String())
		}
	}
	if kube := a.KubeReserved[corev1.ResourceCPU]; kube.MilliValue() != 62 {
		t.Errorf("kube-reserved cpu %s: a reservation rounds up to the millicore", kube.String())
	}
	tight := NewAllocatable(Shape{}, 1000, 1<<30, 10, 900, 0, 900, 0, 0)
	if c := tight.Allocatable[corev1.ResourceCPU]; c.Sign() != 0 {
		t.Errorf("reservations above capacity leave %s, want 0", c.String())
	}
}

// TestAllocatableRoundTrip writes the document and reads it back, as YAML and as JSON.
func TestAllocatableRoundTrip(t *testing.T) {
	t.Parallel()
	a := sampleAllocatable()
	var b bytes.Buffer
	if err := a.WriteYAML(&b); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "alloc.yaml")
	if err := os.WriteFile(path, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	back, err := ReadAllocatable(path)
	if err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods} {
		x, y := a.Allocatable[r], back.Allocatable[r]
		if x.Cmp(y) != 0 {
			t.Errorf("%s: %s read back as %s", r, x.String(), y.String())
		}
	}
	if back.Shape != a.Shape || !back.Measured.Equal(a.Measured) {
		t.Errorf("read back %+v, want %+v", back, a)
	}
	js := `{"apiVersion":"tare.dev/v1alpha1","kind":"MeasuredAllocatable","capacity":{"cpu":"2","memory":"8Gi","pods":"110"},"allocatable":{"cpu":"1900m","memory":"7Gi","pods":"110"}}`
	if _, err := ParseAllocatable([]byte(js)); err != nil {
		t.Errorf("JSON document: %v", err)
	}
}

func TestParseAllocatableRefuses(t *testing.T) {
	t.Parallel()
	good := `apiVersion: tare.dev/v1alpha1
kind: MeasuredAllocatable
capacity: {cpu: "2", memory: 8Gi, pods: "110"}
allocatable: {cpu: 1900m, memory: 7Gi, pods: "110"}
`
	if _, err := ParseAllocatable([]byte(good)); err != nil {
		t.Fatalf("good: %v", err)
	}
	for _, tc := range []struct{ name, doc, want string }{
		{"empty", "", "not a measured allocatable"},
		{"a density result", `{"node":"lab","steps":[]}`, "not a measured allocatable"},
		{"wrong kind", strings.Replace(good, "MeasuredAllocatable", "Node", 1), `kind "Node"`},
		{"unknown field", good + "extra: 1\n", "unknown field"},
		{"no memory", strings.Replace(good, "allocatable: {cpu: 1900m, memory: 7Gi,", "allocatable: {cpu: 1900m,", 1), "allocatable has no memory"},
		{"negative", strings.Replace(good, "1900m", "-1", 1), "negative"},
		{"above capacity", strings.Replace(good, "7Gi", "9Gi", 1), "exceeds capacity"},
		{"bad quantity", strings.Replace(good, "1900m", "lots", 1), "not a measured allocatable"},
		{"not YAML", "{{{", "not a measured allocatable"},
	} {
		if _, err := ParseAllocatable([]byte(tc.doc)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", tc.name, err, tc.want)
		}
	}
	if _, err := ReadAllocatable(filepath.Join(t.TempDir(), "missing.yaml")); err == nil {
		t.Error("a missing file read")
	}
}

// TestAllocatableApply counts against the measured allocatable: the count is what the same node with the
// measured allocatable reported by its kubelet gives.
func TestAllocatableApply(t *testing.T) {
	t.Parallel()
	a := sampleAllocatable()
	n := Node{Name: "lab", Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("8Gi"),
		corev1.ResourcePods: resource.MustParse("110"), "ephemeral-storage": resource.MustParse("10Gi")}, Used: corev1.ResourceList{}}
	got := a.Apply(n)
	if _, ok := n.Allocatable["ephemeral-storage"]; !ok || got.Allocatable.Cpu().Cmp(*a.Allocatable.Cpu()) != 0 || n.Allocatable.Cpu().String() != "2" {
		t.Errorf("Apply: %v (node's was %v)", got.Allocatable, n.Allocatable)
	}
	req := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}
	r, err := Count(got, req, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := int(a.Allocatable.Cpu().MilliValue() / 100); r.Fits != want {
		t.Errorf("fits %d, want %d", r.Fits, want)
	}
	node := &corev1.Node{Status: corev1.NodeStatus{Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi")},
		NodeInfo: corev1.NodeSystemInfo{KernelVersion: "6.1", OSImage: "Debian", ContainerRuntimeVersion: "containerd://1.6"}}}
	node.Name = "other"
	if w := a.Warnings(node); len(w) != 2 || !strings.Contains(strings.Join(w, "\n"), "kernel") || !strings.Contains(strings.Join(w, "\n"), "capacity cpu") {
		t.Errorf("warnings %q: want the kernel and the cpu capacity", w)
	}
}

func TestParseEvictionMemory(t *testing.T) {
	t.Parallel()
	const capacity = 8 << 30
	mi200 := resource.MustParse("200Mi")
	for _, tc := range []struct {
		name, configz string
		want          float64
		bad           bool
	}{
		{"quantity", `{"kubeletconfig":{"evictionHard":{"memory.available":"200Mi","nodefs.available":"10%"}}}`, float64(mi200.Value()), false},
		{"percentage", `{"kubeletconfig":{"evictionHard":{"memory.available":"5%"}}}`, 0.05 * capacity, false},
		{"none set", `{"kubeletconfig":{"cgroupDriver":"cgroupfs"}}`, DefaultEvictionMemory, false},
		{"no memory threshold", `{"kubeletconfig":{"evictionHard":{"nodefs.available":"10%"}}}`, 0, false},
		{"not configz", `{"kind":"Node"}`, 0, true},
		{"bad quantity", `{"kubeletconfig":{"evictionHard":{"memory.available":"lots"}}}`, 0, true},
		{"bad percentage", `{"kubeletconfig":{"evictionHard":{"memory.available":"150%"}}}`, 0, true},
		{"not JSON", `<html>`, 0, true},
	} {
		got, from, err := ParseEvictionMemory([]byte(tc.configz), capacity)
		if tc.bad != (err != nil) || (!tc.bad && (got != tc.want || from == "")) {
			t.Errorf("%s: %v %q %v, want %v (error %v)", tc.name, got, from, err, tc.want, tc.bad)
		}
	}
}
