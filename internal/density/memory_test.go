package density

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestReservedMemory checks the memory reservation against each window's peak moved by hand to the pod
// limit with the median pairwise slope computed here.
func TestReservedMemory(t *testing.T) {
	t.Parallel()
	var ws []Window
	peaks := map[int][]float64{0: {500e6, 520e6}, 10: {535e6, 530e6}, 20: {560e6, 590e6}}
	for _, pods := range []int{0, 10, 20} {
		for _, p := range peaks[pods] {
			ws = append(ws, Window{Step: Step{Pods: pods}, WorkingSet: &WindowMemory{OutsidePeak: p, N: 20}})
		}
	}
	ws = append(ws, Window{Step: Step{Pods: 5}}) // a window without readings is left out
	m := ReservedMemory(ws, 110, 300e6, 100<<20, "test")
	if m == nil {
		t.Fatal("nil")
	}
	var xs, ys, slopes []float64
	for _, w := range ws[:6] {
		xs, ys = append(xs, float64(w.Pods)), append(ys, w.WorkingSet.OutsidePeak)
	}
	for i := range xs {
		for j := i + 1; j < len(xs); j++ {
			if xs[i] != xs[j] {
				slopes = append(slopes, (ys[j]-ys[i])/(xs[j]-xs[i]))
			}
		}
	}
	b := medianOf(slopes)
	want := math.Inf(-1)
	for i := range xs {
		want = math.Max(want, ys[i]+b*(110-xs[i]))
	}
	if math.Abs(m.Slope-b) > 1e-6 || math.Abs(m.Peak-want) > 1 || m.N != 6 {
		t.Errorf("%+v: want slope %v, peak %v over 6 windows", m, b, want)
	}
	if m.Kube != 300e6 || math.Abs(m.System-(want-300e6)) > 1 {
		t.Errorf("kube %v system %v, want 300e6 and the rest", m.Kube, m.System)
	}
	if big := ReservedMemory(ws, 110, 5e9, 0, ""); big.Kube != big.Peak || big.System != 0 {
		t.Errorf("kube above the peak: %+v", big)
	}
	if ReservedMemory(ws[:2], 110, 0, 0, "") != nil {
		t.Error("one pod count gave a reservation")
	}
}

func medianOf(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// TestFindPodsCgroup lays out a lab's hierarchy: two nodes' kubepods under the lab's cgroup.
func TestFindPodsCgroup(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	for _, d := range []string{"tare-lab/node-1/kubepods/burstable", "tare-lab/node-2/kubepods", "system.slice"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	got, err := FindPodsCgroup(root, "node-2")
	if err != nil || got != filepath.Join(root, "tare-lab/node-2/kubepods") {
		t.Errorf("node-2: %q %v", got, err)
	}
	if _, err := FindPodsCgroup(root, "node-3"); err == nil || !strings.Contains(err.Error(), "none names node node-3") {
		t.Errorf("node-3: %v", err)
	}
	if _, err := FindPodsCgroup(filepath.Join(root, "system.slice"), "x"); err == nil {
		t.Error("no kubepods: found one")
	}
}

// TestWatchMemory reads the kernel package's working-set fixtures: the node's peak is the root's working
// set, the outside peak the root's less the child's.
func TestWatchMemory(t *testing.T) {
	t.Parallel()
	cg := MemoryCgroups{Root: "../kernel/testdata/workingset/v1", Pods: "../kernel/testdata/workingset/v1/kubepods"}
	if err := CheckMemoryCgroups(cg); err != nil {
		t.Fatal(err)
	}
	stop := watchMemory(context.Background(), cg, 10*time.Millisecond)
	time.Sleep(30 * time.Millisecond)
	m := stop()
	if m.N < 2 || m.NodePeak <= m.OutsidePeak || m.OutsidePeak <= 0 {
		t.Errorf("%+v", m)
	}
	if err := CheckMemoryCgroups(MemoryCgroups{Root: "../kernel/testdata/workingset/v2", Pods: cg.Pods}); err == nil || !strings.Contains(err.Error(), "v2 root") {
		t.Errorf("v2 root: %v", err)
	}
}
