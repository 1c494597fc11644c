package cli

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/tare-dev/tare/internal/experiment"
	"github.com/tare-dev/tare/internal/kube"
)

// An experiment's guard, observed from outside: the test watches the guard's pods through the API and
// times its own API GETs, so that each trial's ready-seconds and api-latency-ms are held to what the
// cluster and the test saw, not to tare's own clock readings alone.

// guardPod is one guard pod as the test saw it.
type guardPod struct {
	created, ready time.Time // the API server's creationTimestamp and Ready condition (whole seconds)
	gone           time.Time // when the test saw it deleted (its own clock)
	latencies      []float64 // ms of the test's own GETs (the guard's: one page of one pod) when it saw it Ready
}

// guardWatch follows the guard's pods (app=tare-guard in default) with a watch of the API server that
// kubeconfig names, from before the file exists (an experiment's lab) until stop; it reconnects when the
// watch ends.
type guardWatch struct {
	mu     sync.Mutex
	pods   map[types.UID]*guardPod
	cancel context.CancelFunc
	done   chan struct{}
}

func watchGuard(kubeconfig string) *guardWatch {
	ctx, cancel := context.WithCancel(context.Background())
	w := &guardWatch{pods: map[types.UID]*guardPod{}, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for ctx.Err() == nil {
			w.follow(ctx, kubeconfig)
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}()
	return w
}

// follow watches until the watch or ctx ends (the client is made afresh each time: the lab's kubeconfig
// appears once the experiment has started it).
func (w *guardWatch) follow(ctx context.Context, kubeconfig string) {
	c, err := kube.NewClient(kubeconfig, kube.Options{QPS: 1000, Burst: 1000})
	if err != nil {
		return
	}
	cs, err := c.Clientset()
	if err != nil {
		return
	}
	wi, err := cs.CoreV1().Pods(metav1.NamespaceDefault).Watch(ctx, metav1.ListOptions{LabelSelector: "app=tare-guard"})
	if err != nil {
		return
	}
	defer wi.Stop()
	for ev := range wi.ResultChan() {
		if p, ok := ev.Object.(*corev1.Pod); ok {
			w.saw(ctx, cs, p, ev.Type == watch.Deleted)
		}
	}
}

func (w *guardWatch) saw(ctx context.Context, cs kubernetes.Interface, p *corev1.Pod, deleted bool) {
	w.mu.Lock()
	g := w.pods[p.UID]
	if g == nil {
		g = &guardPod{created: p.CreationTimestamp.Time}
		w.pods[p.UID] = g
	}
	if (deleted || p.DeletionTimestamp != nil) && g.gone.IsZero() {
		g.gone = time.Now()
	}
	justReady := false
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue && g.ready.IsZero() {
			g.ready, justReady = c.LastTransitionTime.Time, true
		}
	}
	w.mu.Unlock()
	if justReady {
		lat := timeGets(ctx, cs)
		w.mu.Lock()
		g.latencies = lat
		w.mu.Unlock()
	}
}

// timeGets times 20 GETs of the request the guard times (one page of one pod in default), in ms.
func timeGets(ctx context.Context, cs kubernetes.Interface) []float64 {
	var ms []float64
	for range 20 {
		start := time.Now()
		if _, err := cs.CoreV1().Pods(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
			return nil
		}
		ms = append(ms, float64(time.Since(start).Microseconds())/1000)
	}
	return ms
}

// stop ends the watch and returns the guard pods seen, oldest first.
func (w *guardWatch) stop() []guardPod {
	w.cancel()
	<-w.done
	var out []guardPod
	for _, g := range w.pods {
		out = append(out, *g)
	}
	slices.SortFunc(out, func(a, b guardPod) int { return a.created.Compare(b.created) })
	return out
}

// checkGuard holds each trial's guard to its pod, the one created during the trial. Ready-seconds run
// from the trial's (re)start, before the guard's Deployment exists, to its Service answering, after the
// pod is Ready, and end before the guard is deleted at the trial's end: so they lie between the pod's
// creation-to-Ready time (less 1 s: the API's timestamps are whole seconds) and the time from the trial's
// start to the test seeing the pod deleted. The latency, a median of 20 GETs, lies within a quarter of the
// fastest and four times the slowest of the same 20 GETs the test timed itself when it saw the pod Ready, a
// moment before: the same order of magnitude, which a unit or clock error would leave (a loose range: the
// machine has 2 cores, the two sets of GETs are not simultaneous, and the test's client shares a process
// with its other watchers; a CI run saw tare's median 1.17 ms against the test's 2.33–10.07 ms).
func checkGuard(t *testing.T, trials []experiment.Trial, pods []guardPod) {
	t.Helper()
	for i, tr := range trials {
		// The API's whole seconds against the trials' starts in whole seconds: a trial's pod is created
		// after its start, and the trial lasts seconds past it.
		from, next := tr.Started.Truncate(time.Second), time.Now()
		if i+1 < len(trials) {
			next = trials[i+1].Started.Truncate(time.Second)
		}
		var mine []guardPod
		for _, g := range pods {
			if !g.created.Before(from) && g.created.Before(next) {
				mine = append(mine, g)
			}
		}
		ready, rok := tr.Guard[experiment.GuardReady]
		latency, lok := tr.Guard[experiment.GuardLatency]
		if tr.Status != "ok" || !rok || !lok || len(mine) != 1 || len(mine[0].latencies) == 0 {
			t.Errorf("trial %d (%s): %s %s, guard %v; guard pods seen in the trial (want one, timed): %+v", tr.Seq, tr.Variant, tr.Status, tr.Error, tr.Guard, mine)
			continue
		}
		g := mine[0]
		lo, hi := g.ready.Sub(g.created).Seconds()-1, g.gone.Sub(tr.Started).Seconds()
		fastest, slowest := slices.Min(g.latencies), slices.Max(g.latencies)
		t.Logf("trial %d (%s): ready %.2f s in [%.0f, %.2f]; latency %.2f ms, the test's GETs %.2f–%.2f ms",
			tr.Seq, tr.Variant, ready, lo, hi, latency, fastest, slowest)
		if g.ready.IsZero() || g.gone.IsZero() || ready < lo || ready > hi {
			t.Errorf("trial %d: ready-seconds %.2f, want within [%.0f, %.2f]: the pod's creation to Ready, and the trial's start to the pod's deletion (pod %+v)",
				tr.Seq, ready, lo, hi, g)
		}
		if latency < fastest/4 || latency > 4*slowest {
			t.Errorf("trial %d: api-latency-ms %.2f, the test's own GETs took %.2f–%.2f ms (%v)", tr.Seq, latency, fastest, slowest, g.latencies)
		}
	}
}
