package fit

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func rl(t *testing.T, s string) corev1.ResourceList {
	t.Helper()
	l, err := ParseList(s)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestCount: counts worked out by hand. Node: 4 CPUs, 16Gi, 110 pods; 10 pods there request 1 CPU, 2Gi.
func TestCount(t *testing.T) {
	n := Node{Name: "n", Allocatable: rl(t, "cpu=4,memory=16Gi,pods=110"), Used: rl(t, "cpu=1,memory=2Gi"), Pods: 10}
	for _, tc := range []struct {
		request, overhead string
		fits              int
		binding           corev1.ResourceName
	}{
		{"cpu=500m,memory=1Gi", "", 6, corev1.ResourceCPU},                      // 3000/500 = 6; 14Gi/1Gi = 14
		{"cpu=100m,memory=1Gi", "", 14, corev1.ResourceMemory},                  // 30; 14
		{"cpu=490m,memory=1Gi", "cpu=10m,memory=4Mi", 6, corev1.ResourceCPU},    // 3000/500 = 6
		{"cpu=10m,memory=100Mi", "cpu=0,memory=28Mi", 100, corev1.ResourcePods}, // 300; 14336/128 = 112; pods 100
		{"memory=5Gi", "", 2, corev1.ResourceMemory},                            // 14/5 = 2
	} {
		var over corev1.ResourceList
		if tc.overhead != "" {
			over = rl(t, tc.overhead)
		}
		r, err := Count(n, rl(t, tc.request), over)
		if err != nil || r.Fits != tc.fits || r.Binding != tc.binding {
			t.Errorf("Count(%s + %s) = %d binding %s (%v); want %d, %s", tc.request, tc.overhead, r.Fits, r.Binding, err, tc.fits, tc.binding)
		}
	}
	// The overhead alone names memory: memory still binds (14Gi / 1Gi = 14 against cpu's 300).
	if r, err := Count(n, rl(t, "cpu=10m"), rl(t, "memory=1Gi")); err != nil || r.Fits != 14 || r.Binding != corev1.ResourceMemory {
		t.Errorf("a memory overhead on a cpu request: %d binding %s (%v); want 14, memory", r.Fits, r.Binding, err)
	}
	if _, err := Count(n, rl(t, "nvidia.com/gpu=1"), nil); err == nil || !strings.Contains(err.Error(), "no allocatable nvidia.com/gpu") {
		t.Errorf("a resource the node lacks: %v", err)
	}
	full := Node{Name: "n", Allocatable: rl(t, "cpu=1,memory=1Gi"), Used: rl(t, "cpu=1500m")}
	if r, _ := Count(full, rl(t, "cpu=100m"), nil); r.Fits != 0 {
		t.Errorf("an overcommitted node fits %d", r.Fits)
	}
}

// TestLargest: the inverse, by hand.
func TestLargest(t *testing.T) {
	n := Node{Name: "n", Allocatable: rl(t, "cpu=4,memory=16Gi,pods=110"), Used: rl(t, "cpu=1,memory=2Gi"), Pods: 10}
	got, err := Largest(n, 30, rl(t, "cpu=2m,memory=4Mi"))
	// cpu: (3000 − 60)/30 = 98m; memory: (14336Mi − 120Mi)/30 = 473.86Mi → 473Mi
	if err != nil || got.Cpu().String() != "98m" || got.Memory().String() != "473Mi" {
		t.Errorf("Largest(30) = %v, %v; want cpu 98m, memory 473Mi", got, err)
	}
	if _, err := Largest(n, 101, nil); err == nil || !strings.Contains(err.Error(), "takes 100 more pods") {
		t.Errorf("beyond the pod limit: %v", err)
	}
}

func TestParseList(t *testing.T) {
	l, err := ParseList("cpu=500m, memory=1Gi")
	if err != nil || l.Cpu().MilliValue() != 500 || l.Memory().Value() != 1<<30 {
		t.Errorf("%v %v", l, err)
	}
	for _, bad := range []string{"", "cpu", "cpu=lots", "cpu=1,cpu=2", "memory=-1Gi"} {
		if _, err := ParseList(bad); err == nil {
			t.Errorf("ParseList(%q) accepted", bad)
		}
	}
}

// TestPodRequests: containers summed, the larger init container wins per resource, overhead added.
func TestPodRequests(t *testing.T) {
	req := func(s string) corev1.ResourceRequirements { return corev1.ResourceRequirements{Requests: rl(t, s)} }
	p := &corev1.Pod{Spec: corev1.PodSpec{
		Containers:     []corev1.Container{{Resources: req("cpu=100m,memory=64Mi")}, {Resources: req("cpu=200m")}},
		InitContainers: []corev1.Container{{Resources: req("cpu=500m,memory=32Mi")}},
		Overhead:       rl(t, "cpu=5m,memory=4Mi"),
	}}
	got := PodRequests(p)
	if want := resource.MustParse("505m"); got.Cpu().Cmp(want) != 0 || got.Memory().String() != "68Mi" {
		t.Errorf("PodRequests = %v; want cpu 505m, memory 68Mi", got)
	}
}
