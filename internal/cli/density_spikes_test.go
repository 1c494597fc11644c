package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/tare-dev/tare/internal/component"
	"github.com/tare-dev/tare/internal/density"
	"github.com/tare-dev/tare/internal/fit"
	"github.com/tare-dev/tare/internal/lab/images"
	"github.com/tare-dev/tare/internal/testload"
)

// TestDensitySpikesOnLab runs tare density on a real one-node lab with --percentile 90 and
// --allocatable-out, and checks the spike reservation three ways: recomputed here from the run's own
// per-second series (the JSON's recording of every window: each second moved to --max-pods by the median of
// the windows' pairwise slopes, then the ⌈n·p⌉-th smallest), the kubelet's seconds against its own
// utime + stime traced by the test (the percentile of the traced seconds), and each window's memory peak
// against the working set the test reads itself from the v1 memory cgroups while the run goes on. The measured
// allocatable it writes reads back, adds up, and names this machine's kernel.
func TestDensitySpikesOnLab(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	dir, kc := sharedLab(ctx, t)
	const top, pct = 6, 90.0
	allocFile := filepath.Join(t.TempDir(), "allocatable.yaml")
	kubelet := testload.TraceUsage(processCPU(t, dir, "kubelet"))
	mem := watchWorkingSet(t)
	out, errOut, err := run(ctx, "density", "--kubeconfig", kc, "--pods", "0,3,"+strconv.Itoa(top), "--trials", "2",
		"--window", "8s", "--settle", "2s", "--max-pods", strconv.Itoa(top), "--percentile", "90", "--allocatable-out", allocFile, "-o", "json")
	kubelet.Stop()
	outside := mem()
	if err != nil {
		t.Fatalf("density: %v\n%s", err, errOut)
	}
	var got density.Output
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("density -o json: %v\n%s", err, out)
	}
	sp := got.Spikes
	if sp == nil || sp.Percentile != pct || sp.MaxPods != top || !slices.Equal(sp.Kube.From, got.Model.OverheadFrom) {
		t.Fatalf("spikes %+v: want p%v at %d pods from %v", sp, pct, top, got.Model.OverheadFrom)
	}

	// 1. Recomputed from the recorded series.
	want, n := percentileAt(got.Steps, sp.Kube.From, top, pct/100)
	if got.KubeReserved == nil {
		t.Fatal("no mean-based kube-reserved beside the spikes")
	}
	t.Logf("kube-reserved at p90, %d pods: tare %.1fm [%v, %v] over %d seconds, recomputed %.1fm over %d; mean %.1fm; mean-based %.1fm",
		top, sp.Kube.CPU.Value, sp.Kube.CPU.Lo, sp.Kube.CPU.Hi, sp.Kube.CPU.N, want, n, sp.Kube.Mean, got.KubeReserved.Mean.CPU)
	if n != sp.Kube.CPU.N || math.Abs(sp.Kube.CPU.Value-want) > 1e-6 {
		t.Errorf("kube-reserved p90 %.3fm over %d seconds; recomputed from the series %.3fm over %d", sp.Kube.CPU.Value, sp.Kube.CPU.N, want, n)
	}
	if math.IsInf(sp.Kube.CPU.Hi, 1) || !(sp.Kube.CPU.Lo <= sp.Kube.CPU.Value && sp.Kube.CPU.Value <= sp.Kube.CPU.Hi) {
		t.Errorf("kube-reserved interval [%v, %v] around %v: want both ends bounded with %d seconds", sp.Kube.CPU.Lo, sp.Kube.CPU.Hi, sp.Kube.CPU.Value, sp.Kube.CPU.N)
	}
	if wantSys, _ := percentileAt(got.Steps, sp.System.From, top, pct/100); math.Abs(sp.System.CPU.Value-wantSys) > 1e-6 {
		t.Errorf("system-reserved p90 %.3fm, recomputed %.3fm", sp.System.CPU.Value, wantSys)
	}

	// 2. The kubelet's seconds against its own utime + stime.
	var tareSec, ownSec []float64
	for _, w := range got.Steps {
		series := w.CPUSeries[component.Kubelet]
		step := time.Duration(w.Seconds / float64(len(series)) * float64(time.Second))
		for i, v := range series {
			a := w.Start.Add(time.Duration(i) * step)
			mc, ok := kubelet.Between(a, a.Add(step))
			if !ok {
				t.Fatalf("the kubelet trace does not cover the second at %s", a)
			}
			tareSec, ownSec = append(tareSec, v), append(ownSec, mc)
		}
	}
	tareP, ownP := quantileOf(tareSec, pct/100), quantileOf(ownSec, pct/100)
	t.Logf("kubelet p90 of %d seconds: tare %.1fm, its own utime+stime %.1fm; means %.1fm and %.1fm", len(tareSec), tareP, ownP, meanOf(tareSec), meanOf(ownSec))
	// /proc/PID/stat counts 10 ms ticks: a second's value is off by up to 20m at its two ends.
	if math.Abs(tareP-ownP) > 0.25*ownP+20 {
		t.Errorf("kubelet p90 of 1 s: tare %.1fm, its own utime+stime %.1fm", tareP, ownP)
	}
	if math.Abs(meanOf(tareSec)-meanOf(ownSec)) > 0.1*meanOf(ownSec)+2 {
		t.Errorf("kubelet mean of 1 s: tare %.1fm, its own utime+stime %.1fm", meanOf(tareSec), meanOf(ownSec))
	}

	// 3. Memory against the working set read here, and the allocatable document.
	m := got.Memory
	if m == nil {
		t.Fatalf("no memory reservation; warnings %v", got.Warnings)
	}
	// Each window's peak against the largest the test read within the same window (every 500 ms, so it
	// may miss tare's busiest second): within 10% and 32 MiB either way.
	for _, w := range got.Steps {
		if w.WorkingSet == nil || w.WorkingSet.N == 0 {
			t.Errorf("window at %s (%d pods): no working set read", w.Start.Format(time.TimeOnly), w.Pods)
			continue
		}
		end := w.Start.Add(time.Duration(w.Seconds * float64(time.Second)))
		own := math.Inf(-1)
		for _, r := range outside {
			if !r.at.Before(w.Start) && !r.at.After(end) {
				own = math.Max(own, r.bytes)
			}
		}
		if math.IsInf(own, -1) {
			continue
		}
		if math.Abs(w.WorkingSet.OutsidePeak-own) > 0.1*own+32<<20 {
			t.Errorf("window at %s (%d pods): tare's working set outside the pods peaks at %.0f MiB, the test read %.0f MiB",
				w.Start.Format(time.TimeOnly), w.Pods, w.WorkingSet.OutsidePeak/(1<<20), own/(1<<20))
		}
	}
	t.Logf("memory reserved at %d pods: %.0f MiB outside the pods (kube %.0f, system %.0f, %.2f MiB per pod), evictionHard %.0f MiB (%s)",
		top, m.Peak/(1<<20), m.Kube/(1<<20), m.System/(1<<20), m.Slope/(1<<20), m.EvictionHard/(1<<20), m.EvictionFrom)
	if strings.Contains(m.EvictionFrom, "could not be read") {
		t.Errorf("the eviction threshold was not read from the lab kubelet's configz: %s", m.EvictionFrom)
	}
	a, err := fit.ReadAllocatable(allocFile)
	if err != nil {
		t.Fatal(err)
	}
	release, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	if a.Shape.Kernel != strings.TrimSpace(string(release)) || a.Shape.Node != got.Node {
		t.Errorf("shape %+v: want kernel %q and node %s", a.Shape, strings.TrimSpace(string(release)), got.Node)
	}
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		left := a.Capacity[r].DeepCopy()
		left.Sub(a.KubeReserved[r])
		left.Sub(a.SystemReserved[r])
		if e, ok := a.EvictionHard[r]; ok {
			left.Sub(e)
		}
		if have := a.Allocatable[r]; left.Sign() >= 0 && left.Cmp(have) != 0 {
			t.Errorf("allocatable %s %s, capacity less the reservations %s", r, have.String(), left.String())
		}
	}
	kr := a.KubeReserved[corev1.ResourceCPU]
	if math.Abs(float64(kr.MilliValue())-math.Ceil(sp.Kube.CPU.Value)) > 1 {
		t.Errorf("the document's kube-reserved cpu %s, the report's p90 %.1fm", kr.String(), sp.Kube.CPU.Value)
	}
}

// TestFitMeasuredAllocatableOnLab: a tare fit against a measured allocatable gives the count the real
// scheduler places on the node once the node keeps exactly that much from its pods (a pod of the lab's
// pause image requesting the difference between the kubelet's allocatable and the measured one stands in
// for a kubelet configured with the measured reservations).
func TestFitMeasuredAllocatableOnLab(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	_, kc := sharedLab(ctx, t)
	cs := clientsetOf(t, kc)
	allocFile := filepath.Join(t.TempDir(), "allocatable.yaml")
	if _, errOut, err := run(ctx, "density", "--kubeconfig", kc, "--pods", "0,2,4", "--trials", "2", "--window", "4s", "--settle", "1s",
		"--percentile", "50", "--allocatable-out", allocFile); err != nil {
		t.Fatalf("density: %v\n%s", err, errOut)
	}
	measured, err := fit.ReadAllocatable(allocFile)
	if err != nil {
		t.Fatal(err)
	}
	// Pods that ask for memory only, about a fifth of the measured allocatable each: memory binds whatever
	// this machine's other work leaves of its CPU (a busy machine's system-reserved CPU can be all of it).
	request := fmt.Sprintf("memory=%dMi", measured.Allocatable.Memory().Value()>>20*2/9)
	out, errOut, err := run(ctx, "fit", "--kubeconfig", kc, "--request", request, "--allocatable", allocFile, "-o", "json")
	if err != nil {
		t.Fatalf("fit --allocatable: %v\n%s", err, errOut)
	}
	var pred fit.Output
	if err := json.Unmarshal([]byte(out), &pred); err != nil {
		t.Fatal(err)
	}
	node, err := cs.CoreV1().Nodes().Get(ctx, measured.Shape.Node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	reserve := corev1.ResourceList{}
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		kubelets, ours := node.Status.Allocatable[r], measured.Allocatable[r]
		d := kubelets.DeepCopy()
		d.Sub(ours)
		if d.Sign() < 0 {
			t.Fatalf("the measured allocatable %s %s is above the kubelet's %s", r, ours.String(), kubelets.String())
		}
		reserve[r] = d
	}
	t.Logf("measured allocatable cpu %s memory %s; the kubelet's cpu %s memory %s; fit predicts %d pods of %s (%s binds)",
		measured.Allocatable.Cpu().String(), measured.Allocatable.Memory().String(), node.Status.Allocatable.Cpu().String(),
		node.Status.Allocatable.Memory().String(), pred.Fits, request, pred.Binding)
	if pred.Fits < 1 || pred.Binding == corev1.ResourcePods {
		t.Fatalf("fit predicts %d pods, %s binding: want cpu or memory to bind", pred.Fits, pred.Binding)
	}
	const ns = "fit-allocatable"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cs.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
		waitNamespaceGone(context.Background(), t, cs, ns)
	}()
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, pausePod("reserved", node.Name, reserve), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	req, err := fit.ParseList(request)
	if err != nil {
		t.Fatal(err)
	}
	total := pred.Fits + 2
	for i := range total {
		if _, err := cs.CoreV1().Pods(ns).Create(ctx, pausePod("p"+strconv.Itoa(i), "", req), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	placed, why := scheduled(ctx, t, cs, ns, total+1)
	placed-- // the reserving pod, bound by name
	t.Logf("the scheduler placed %d of %d; the rest: %s", placed, total, why)
	if placed != pred.Fits || !strings.Contains(why, "Insufficient "+string(pred.Binding)) {
		t.Errorf("fit --allocatable predicted %d pods (%s binds); the scheduler placed %d and said %q", pred.Fits, pred.Binding, placed, why)
	}
}

// pausePod is a pod of the lab's pause image requesting req, bound to node when not "".
func pausePod(name, node string, req corev1.ResourceList) *corev1.Pod {
	zero := int64(0)
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{NodeName: node,
		TerminationGracePeriodSeconds: &zero, Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
		Containers: []corev1.Container{{Name: "c", Image: images.Pause.Name, ImagePullPolicy: corev1.PullNever,
			Resources: corev1.ResourceRequirements{Requests: req}}}}}
}

// scheduled waits until each of the namespace's total pods is bound or refused by the scheduler, and
// returns how many are bound and the scheduler's reason for a refused one. A pod created with its node
// named counts as bound.
func scheduled(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns string, total int) (placed int, why string) {
	t.Helper()
	for {
		list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		placed, refused := 0, 0
		for _, p := range list.Items {
			if p.Spec.NodeName != "" {
				placed++
				continue
			}
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodScheduled && c.Reason == corev1.PodReasonUnschedulable {
					refused++
					why = c.Message
				}
			}
		}
		if placed+refused == total {
			return placed, why
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%d placed and %d refused of %d pods", placed, refused, total)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// percentileAt is the p-quantile (the ⌈n·p⌉-th smallest) of the windows' per-second sums of groups, each
// second moved to maxPods pods by the median of the pairwise slopes of the windows' mean sums, and n.
func percentileAt(ws []density.Window, groups []string, maxPods int, p float64) (float64, int) {
	means := make([]float64, len(ws))
	for i, w := range ws {
		for _, g := range groups {
			means[i] += w.Groups[g].CPU
		}
	}
	var slopes []float64
	for i := range ws {
		for j := i + 1; j < len(ws); j++ {
			if ws[i].Pods != ws[j].Pods {
				slopes = append(slopes, (means[j]-means[i])/float64(ws[j].Pods-ws[i].Pods))
			}
		}
	}
	slices.Sort(slopes)
	b := slopes[len(slopes)/2]
	if len(slopes)%2 == 0 {
		b = (slopes[len(slopes)/2-1] + slopes[len(slopes)/2]) / 2
	}
	b = max(0, b)
	var secs []float64
	for _, w := range ws {
		var sum []float64
		for _, g := range groups {
			for i, v := range w.CPUSeries[g] {
				for len(sum) <= i {
					sum = append(sum, 0)
				}
				sum[i] += v
			}
		}
		for _, v := range sum {
			secs = append(secs, v+b*float64(maxPods-w.Pods))
		}
	}
	return quantileOf(secs, p), len(secs)
}

func quantileOf(xs []float64, p float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[int(math.Ceil(p*float64(len(s))-1e-9))-1]
}

func meanOf(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// reading is one working set the test read, and when.
type reading struct {
	at    time.Time
	bytes float64
}

// watchWorkingSet reads, every 500 ms until the returned function is called, the working set of the v1
// memory root less that of every kubepods cgroup under it (usage_in_bytes − total_inactive_file, parsed
// here), and returns the readings.
func watchWorkingSet(t *testing.T) func() []reading {
	t.Helper()
	const root = "/sys/fs/cgroup/memory"
	if _, err := os.Stat(filepath.Join(root, "memory.usage_in_bytes")); err != nil {
		t.Skipf("no cgroup v1 memory hierarchy at %s: the lab test reads the working set there", root)
	}
	ws := func(dir string) float64 {
		b, err := os.ReadFile(filepath.Join(dir, "memory.usage_in_bytes"))
		if err != nil {
			return math.NaN()
		}
		u, _ := strconv.ParseFloat(strings.TrimSpace(string(b)), 64)
		f, err := os.Open(filepath.Join(dir, "memory.stat"))
		if err != nil {
			return math.NaN()
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), " "); ok && k == "total_inactive_file" {
				in, _ := strconv.ParseFloat(v, 64)
				return u - in
			}
		}
		return math.NaN()
	}
	var mu sync.Mutex
	var readings []reading
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			pods := 0.0
			dirs, _ := filepath.Glob(filepath.Join(root, "*", "kubepods"))
			if d := filepath.Join(root, "kubepods"); fileExists(d) {
				dirs = append(dirs, d)
			}
			deeper, _ := filepath.Glob(filepath.Join(root, "*", "*", "kubepods"))
			for _, d := range append(dirs, deeper...) {
				if v := ws(d); !math.IsNaN(v) {
					pods += v
				}
			}
			if v := ws(root); !math.IsNaN(v) && len(dirs)+len(deeper) > 0 {
				mu.Lock()
				readings = append(readings, reading{time.Now(), v - pods})
				mu.Unlock()
			}
			select {
			case <-stop:
				return
			case <-time.After(500 * time.Millisecond):
			}
		}
	}()
	return func() []reading {
		close(stop)
		<-done
		mu.Lock()
		defer mu.Unlock()
		return readings
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
