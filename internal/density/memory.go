package density

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/tare-dev/tare/internal/fit"
	"github.com/tare-dev/tare/internal/kernel"
	"github.com/tare-dev/tare/internal/kube"
	"github.com/tare-dev/tare/internal/output"
	"github.com/tare-dev/tare/internal/warning"
)

// WindowMemory is the working set the kubelet's eviction manager would have seen in a window, read every
// second: the node's (its memory cgroup root) and the pods' (the kubelet's kubepods cgroup), in bytes.
type WindowMemory struct {
	// OutsidePeak is the largest node − pods working set of the window: what the node's daemons, runtime
	// and system held beside the pods at their busiest second. NodePeak is the node's largest.
	OutsidePeak float64 `json:"outside_pods_peak_bytes"`
	NodePeak    float64 `json:"node_peak_bytes"`
	N           int     `json:"n"` // readings
}

// MemoryCgroups are the memory cgroups a density run reads the working set of.
type MemoryCgroups struct {
	Root string // the memory hierarchy's root (the node's working set)
	Pods string // the kubelet's kubepods cgroup (the pods')
}

// MemoryRoot is the memory hierarchy under sysRoot: cgroup v1's memory controller, else the v2 root
// (whose working set ReadWorkingSet reads from its memory.stat, as the kubelet does).
func MemoryRoot(sysRoot string) string {
	v1 := filepath.Join(sysRoot, "fs", "cgroup", "memory")
	if _, err := os.Stat(filepath.Join(v1, "memory.usage_in_bytes")); err == nil {
		return v1
	}
	return filepath.Join(sysRoot, "fs", "cgroup")
}

// FindPodsCgroup finds node's kubepods cgroup under root, down to three levels (a lab node's sits under
// its own cgroup): the only one, else the one whose path names the node.
func FindPodsCgroup(root, node string) (string, error) {
	var found []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil //nolint:nilerr // a cgroup gone while walked is skipped
		}
		rel, _ := filepath.Rel(root, p)
		if depth := strings.Count(rel, string(filepath.Separator)); rel != "." && depth >= 3 {
			return filepath.SkipDir
		}
		if name := d.Name(); name == "kubepods" || name == "kubepods.slice" {
			found = append(found, p)
			return filepath.SkipDir
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	switch {
	case len(found) == 1:
		return found[0], nil
	case len(found) == 0:
		return "", fmt.Errorf("no kubepods cgroup under %s: the kubelet's pods are not in this memory hierarchy", root)
	}
	for _, p := range found {
		if strings.Contains(p, string(filepath.Separator)+node+string(filepath.Separator)) {
			return p, nil
		}
	}
	return "", fmt.Errorf("%d kubepods cgroups under %s and none names node %s", len(found), root, node)
}

// watchMemory reads the working sets every interval until ctx ends or stop is called, and returns the
// window's peaks (zero readings when none could be read).
func watchMemory(ctx context.Context, cg MemoryCgroups, every time.Duration) (stop func() WindowMemory) {
	var mu sync.Mutex
	var m WindowMemory
	read := func() {
		node, err := kernel.ReadWorkingSet(cg.Root)
		if err != nil {
			return
		}
		pods, err := kernel.ReadWorkingSet(cg.Pods)
		if err != nil {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		m.N++
		m.NodePeak = math.Max(m.NodePeak, float64(node.Bytes))
		m.OutsidePeak = math.Max(m.OutsidePeak, float64(node.Bytes)-float64(pods.Bytes))
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			read()
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return func() WindowMemory {
		cancel()
		<-done
		read()
		mu.Lock()
		defer mu.Unlock()
		return m
	}
}

// CheckMemoryCgroups reads both cgroups once: an error says why the run cannot measure the working set.
func CheckMemoryCgroups(cg MemoryCgroups) error {
	for _, dir := range []string{cg.Root, cg.Pods} {
		if _, err := kernel.ReadWorkingSet(dir); err != nil {
			if errors.Is(err, kernel.ErrNotSupported) {
				return fmt.Errorf("the working set of %s: %w (the memory controller is on neither the cgroup v1 memory hierarchy nor this v2 root)", dir, err)
			}
			return fmt.Errorf("the working set of %s: %w", dir, err)
		}
	}
	return nil
}

// MemoryReserved is the memory a node of MaxPods pods keeps from them, as the eviction manager counts it:
// the largest working set outside the pods' cgroup in any window, each window's moved to MaxPods by the
// per-pod slope of the windows' peaks (Theil–Sen, 0 when it falls) as the CPU's seconds are. Kube is the
// kube-reserved part (the components' PSS at MaxPods, the upper end of its line, at most Peak), System
// the rest; EvictionHard is the kubelet's memory.available threshold.
type MemoryReserved struct {
	MaxPods      int     `json:"max_pods"`
	Peak         float64 `json:"outside_pods_peak_bytes"`
	Slope        float64 `json:"slope_bytes_per_pod"`
	Kube         float64 `json:"kube_reserved_bytes"`
	System       float64 `json:"system_reserved_bytes"`
	EvictionHard float64 `json:"eviction_hard_bytes"`
	EvictionFrom string  `json:"eviction_hard_from"`
	N            int     `json:"windows"`
}

// ReservedMemory is the windows' MemoryReserved at maxPods, kube the kube-reserved memory measured from
// the components (Reserved.Measured.Memory), nil without working sets at two pod counts.
func ReservedMemory(ws []Window, maxPods int, kube, eviction float64, evictionFrom string) *MemoryReserved {
	var xs, ys []float64
	counts := map[int]bool{}
	for _, w := range ws {
		if w.WorkingSet == nil || w.WorkingSet.N == 0 {
			continue
		}
		xs, ys = append(xs, float64(w.Pods)), append(ys, w.WorkingSet.OutsidePeak)
		counts[w.Pods] = true
	}
	if maxPods <= 0 || len(counts) < 2 {
		return nil
	}
	m := &MemoryReserved{MaxPods: maxPods, EvictionHard: eviction, EvictionFrom: evictionFrom, N: len(xs), Peak: math.Inf(-1)}
	if b, ok := slope(xs, ys); ok && b > 0 {
		m.Slope = b
	}
	for i := range xs {
		m.Peak = math.Max(m.Peak, ys[i]+m.Slope*(float64(maxPods)-xs[i]))
	}
	m.Peak = max(0, m.Peak)
	if math.IsNaN(kube) {
		kube = 0
	}
	m.Kube = math.Min(max(0, kube), m.Peak)
	m.System = m.Peak - m.Kube
	return m
}

// table writes the memory reservation and the threshold.
func (m *MemoryReserved) table(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "Memory at %d pods, as the eviction manager counts it (working set: usage − inactive_file):\n", m.MaxPods)
	fmt.Fprintf(tw, "  peak outside the pods' cgroup\t%s\t(largest of %d windows, %s per pod)\n", output.MiBFixed(m.Peak, 0), m.N, output.MiBFixed(m.Slope, 2))
	fmt.Fprintf(tw, "  kube-reserved\t%s\t(the components' PSS at %d pods)\n", output.MiBFixed(m.Kube, 0), m.MaxPods)
	fmt.Fprintf(tw, "  system-reserved\t%s\t(the rest of the peak)\n", output.MiBFixed(m.System, 0))
	fmt.Fprintf(tw, "  evictionHard\t%s\t(%s)\n", output.MiBFixed(m.EvictionHard, 0), m.EvictionFrom)
	return tw.Flush()
}

// WarnNoWorkingSet marks a run that could not read the working set: no memory reservation, no measured
// allocatable. WarnEvictionDefault one that could not read the kubelet's eviction threshold.
const (
	WarnNoWorkingSet    = "no-working-set"
	WarnEvictionDefault = "eviction-default"
)

// memorySetup finds the memory cgroups the windows read (into o.memory) and the kubelet's eviction
// threshold; what it cannot find is a warning, and the run goes on without it.
func memorySetup(ctx context.Context, cs kubernetes.Interface, o *Options, node fit.Node, say func(string, ...any)) ([]warning.Warning, float64, string) {
	var warns []warning.Warning
	if o.MemoryRoot != "" {
		pods, err := FindPodsCgroup(o.MemoryRoot, node.Name)
		cg := MemoryCgroups{Root: o.MemoryRoot, Pods: pods}
		if err == nil {
			err = CheckMemoryCgroups(cg)
		}
		if err != nil {
			w := warning.Warning{Code: WarnNoWorkingSet, Figure: "memory_reserved", Message: "no memory reservation or measured allocatable: " + err.Error(),
				Cause: "the node's memory cgroups are not where --sys-root points, or the memory controller is not on the hierarchy found"}
			say("warning: %s", w.Message)
			warns = append(warns, w)
		} else {
			o.memory = &cg
		}
	}
	capacity := node.Capacity.Memory().AsApproximateFloat64()
	b, err := kube.KubeletConfigz(ctx, cs, node.Name)
	var evict float64
	var from string
	if err == nil {
		evict, from, err = fit.ParseEvictionMemory(b, capacity)
	}
	if err != nil {
		evict, from = fit.DefaultEvictionMemory, "the kubelet's default 100Mi, assumed: its configuration could not be read"
		w := warning.Warning{Code: WarnEvictionDefault, Figure: "memory_reserved.eviction_hard_bytes",
			Message: "evictionHard memory.available taken as the kubelet's default 100Mi: " + err.Error(), Cause: "no nodes/proxy permission, or the kubelet's configz is off"}
		say("warning: %s", w.Message)
		warns = append(warns, w)
	}
	return warns, evict, from
}

// measuredAllocatable is the node shape's measured allocatable from the report's percentile CPU and
// working-set memory, nil when either is missing.
func measuredAllocatable(ctx context.Context, cs kubernetes.Interface, node fit.Node, o Options, maxPods int, rep Report) *fit.Allocatable {
	s, m := rep.Spikes, rep.Memory
	if s == nil || m == nil || math.IsNaN(s.Kube.CPU.Value) || math.IsNaN(s.System.CPU.Value) {
		return nil
	}
	n, err := cs.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
	if err != nil {
		n = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node.Name}}
	}
	a := fit.NewAllocatable(fit.ShapeOf(n, o.Image), node.Capacity.Cpu().AsApproximateFloat64()*1000, node.Capacity.Memory().AsApproximateFloat64(), maxPods,
		s.Kube.CPU.Value, m.Kube, s.System.CPU.Value, m.System, m.EvictionHard)
	a.Measured, a.TareVersion = rep.Started.UTC().Truncate(time.Second), o.Session.Version
	a.Basis = []string{
		fmt.Sprintf("cpu: kube-reserved (%s) and system-reserved (%s) at the p%s of 1 s demand, %d seconds moved to %d pods by the per-pod slope, 95%% interval [%s, %s] and [%s, %s] millicores",
			strings.Join(s.Kube.From, ", "), strings.Join(s.System.From, ", "), output.Percentile(s.Percentile), s.Kube.CPU.N, maxPods,
			output.MillicoresEnd(s.Kube.CPU.Lo), output.MillicoresEnd(s.Kube.CPU.Hi), output.MillicoresEnd(s.System.CPU.Lo), output.MillicoresEnd(s.System.CPU.Hi)),
		fmt.Sprintf("memory: the largest working set outside the pods' cgroup in %d windows, moved to %d pods; kube-reserved the components' PSS, system-reserved the rest", m.N, maxPods),
		"evictionHard memory: " + m.EvictionFrom,
	}
	if s.ChurnRate > 0 {
		a.Basis = append(a.Basis, fmt.Sprintf("cpu includes pod starts at %g/s (--churn)", s.ChurnRate))
	}
	return &a
}
