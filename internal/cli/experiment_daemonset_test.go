package cli

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/tare-dev/tare/internal/compare"
	"github.com/tare-dev/tare/internal/experiment"
	"github.com/tare-dev/tare/internal/kube"
	"github.com/tare-dev/tare/internal/record"
	"github.com/tare-dev/tare/internal/testload"
)

// TestExperimentDaemonSetOnLab runs the ready-made node-exporter spec (examples/experiments), cut to two
// short trials a variant, on a one-node lab. Ground truth that is not tare's counter: the DaemonSet's pods
// as the API server lists them, polled by the test (Ready through every node-exporter window, absent from
// every baseline window, and their cgroups and processes gone at the end), and each pod's own cgroup CPU
// (cpuacct.usage or cpu.stat, traced every 10 ms) over the trial's window, which the per-pod CPU tare
// reports must match. About 80 s: the lab's start and settle (25 s), two 10 s baseline trials, two node
// exporter trials of about 20 s (the exporters image built and imported by the first, the pod Ready, the
// window, the namespace deleted and the pod waited out).
func TestExperimentDaemonSetOnLab(t *testing.T) {
	requireLab(t)
	spec, err := experiment.Load("../../examples/experiments/node-exporter.yaml")
	if err != nil {
		t.Fatal(err)
	}
	spec.Trials, spec.Warmup.Duration, spec.Window.Duration = 2, time.Second, 6*time.Second
	// The exporter scraped every second instead of every 15 s (its readiness probe), so that its pod
	// burns CPU enough in a 6 s window for the comparison with its cgroup to say something.
	for i, v := range spec.Variants {
		for j, m := range v.Manifests {
			b, err := os.ReadFile(m)
			if err != nil {
				t.Fatal(err)
			}
			busy := strings.Replace(string(b), "periodSeconds: 15", "periodSeconds: 1", 1)
			if busy == string(b) {
				t.Fatalf("%s: no readiness probe period of 15 s to shorten", m)
			}
			spec.Variants[i].Manifests[j] = filepath.Join(t.TempDir(), filepath.Base(m))
			if err := os.WriteFile(spec.Variants[i].Manifests[j], []byte(busy), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	off := false
	spec.Guard.Deployment = &off // the guard Deployment's seconds are not the question here
	b, err := yaml.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "node-exporter.yaml")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "ds")
	w := watchDaemonSetPods(filepath.Join(out, "lab", "kubeconfig"), "node-exporter")
	stdout, stderr, err := run(context.Background(), "experiment", path, "--out", out, "--lab-dir", t.TempDir(), "-o", "json")
	w.stop()
	if err != nil {
		t.Fatalf("experiment: %v\n%s", err, stderr)
	}
	t.Log(stderr)
	r := decodeResults(t, stdout)
	assertNoLab(t, out)
	if len(r.Trials) != 4 {
		t.Fatalf("%d trials, want 4", len(r.Trials))
	}
	for _, tr := range r.Trials {
		if tr.Status != "ok" {
			t.Fatalf("trial %d (%s): %s %s", tr.Seq, tr.Variant, tr.Status, tr.Error)
		}
		rec, err := record.Read(context.Background(), tr.Recording)
		if err != nil || len(rec.Samples) < 2 {
			t.Fatalf("trial %d's recording: %v", tr.Seq, err)
		}
		from, to := rec.Samples[0].Time, rec.Samples[len(rec.Samples)-1].Time
		seen := w.during(from, to)
		if len(seen) == 0 {
			t.Fatalf("trial %d (%s): the test's poll saw nothing in its window %s–%s", tr.Seq, tr.Variant, from, to)
		}
		if tr.Variant == "none" {
			for _, s := range seen {
				if len(s.pods) > 0 {
					t.Errorf("trial %d (baseline): node-exporter pods %v exist at %s, inside its window", tr.Seq, s.pods, s.at)
				}
			}
			if tr.Metrics[compare.DaemonSetPods] != 0 || tr.Metrics[compare.DaemonSetPodCPU] != 0 {
				t.Errorf("trial %d (baseline): daemonset metrics %v, want zeros", tr.Seq, tr.Metrics)
			}
			continue
		}
		uid := ""
		for _, s := range seen {
			if len(s.pods) != 1 || len(s.ready) != 1 || (uid != "" && s.pods[0] != uid) {
				t.Fatalf("trial %d: at %s the pods are %v, Ready %v: want the one pod Ready through the window", tr.Seq, s.at, s.pods, s.ready)
			}
			uid = s.pods[0]
		}
		if n := tr.Metrics[compare.DaemonSetPods]; n != 1 {
			t.Errorf("trial %d: %v pods measured, want the lab's one node's", tr.Seq, n)
		}
		trace := w.trace(uid)
		if trace == nil {
			t.Fatalf("trial %d: pod %s was never traced", tr.Seq, uid)
		}
		want, ok := trace.Between(from, to)
		if !ok {
			t.Fatalf("trial %d: the cgroup trace of pod %s does not cover the window", tr.Seq, uid)
		}
		got := tr.Metrics[compare.DaemonSetPodCPU]
		t.Logf("trial %d: tare credits the pod %.2fm (node %.2fm, %.1f MiB), its cgroup used %.2fm", tr.Seq, got,
			tr.Metrics[compare.DaemonSetNodeCPU], tr.Metrics[compare.DaemonSetPodMemory], want)
		// As checkPodCPU: tare reads the tasks one by one, the cgroup counts them all at once.
		if want < 1 {
			t.Errorf("trial %d: the pod's cgroup used %.2fm: too little for the comparison to say anything", tr.Seq, want)
		}
		if got-want > 0.25*want+2 || want-got > 0.25*want+2 {
			t.Errorf("trial %d: tare credits the pod %.2fm, its cgroup used %.2fm over the same window: want within 25%% + 2m", tr.Seq, got, want)
		}
		if mem := tr.Metrics[compare.DaemonSetPodMemory]; mem <= 0 {
			t.Errorf("trial %d: the pod's memory is %.1f MiB", tr.Seq, mem)
		}
	}
	// Gone after: no pod cgroup and no exporter process is left.
	for _, uid := range w.uids() {
		if dir, ok := findPodCgroup(uid); ok {
			t.Errorf("pod %s's cgroup %s is still there after the experiment", uid, dir)
		}
	}
	if pids := podPIDsByComm("prometheus-node"); len(pids) > 0 {
		t.Errorf("node exporter processes %v are left after the experiment", pids)
	}
	if x, ok := row(r, compare.DaemonSetNodeCPU); !ok || len(x.Cells) != 2 || x.Cells[1].Shift == nil {
		t.Errorf("no daemonset-node-cpu comparison: %+v", x)
	}
}

// dsPoll is one look at a DaemonSet's pods: all of them and the Ready ones, by UID.
type dsPoll struct {
	at          time.Time
	pods, ready []string
}

// dsWatch polls the pods of a namespace every 200 ms, once the experiment's lab runs, and traces the
// cgroup of every pod it sees running.
type dsWatch struct {
	mu     sync.Mutex
	polls  []dsPoll
	traces map[string]*testload.UsageTrace
	cancel context.CancelFunc
	done   chan struct{}
}

func watchDaemonSetPods(kubeconfig, namespace string) *dsWatch {
	ctx, cancel := context.WithCancel(context.Background())
	w := &dsWatch{traces: map[string]*testload.UsageTrace{}, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for ctx.Err() == nil {
			w.look(ctx, kubeconfig, namespace)
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	return w
}

func (w *dsWatch) look(ctx context.Context, kubeconfig, namespace string) {
	c, err := kube.NewClient(kubeconfig, kube.Options{Timeout: 5 * time.Second})
	if err != nil {
		return
	}
	cs, err := c.Clientset()
	if err != nil {
		return
	}
	at := time.Now()
	pods, err := cs.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return // the lab is between starts, or down
	}
	p := dsPoll{at: at}
	for _, pod := range pods.Items {
		uid := string(pod.UID)
		p.pods = append(p.pods, uid)
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue && pod.DeletionTimestamp == nil {
				p.ready = append(p.ready, uid)
			}
		}
		w.mu.Lock()
		if _, ok := w.traces[uid]; !ok && pod.Status.Phase == corev1.PodRunning {
			if dir, ok := findPodCgroup(uid); ok {
				w.traces[uid] = testload.TraceCgroup(dir)
			}
		}
		w.mu.Unlock()
	}
	w.mu.Lock()
	w.polls = append(w.polls, p)
	w.mu.Unlock()
}

func (w *dsWatch) stop() {
	w.cancel()
	<-w.done
	for _, tr := range w.traces {
		tr.Stop()
	}
}

// during are the polls taken within [from, to].
func (w *dsWatch) during(from, to time.Time) []dsPoll {
	var out []dsPoll
	for _, p := range w.polls {
		if !p.at.Before(from) && !p.at.After(to) {
			out = append(out, p)
		}
	}
	return out
}

func (w *dsWatch) trace(uid string) *testload.UsageTrace { return w.traces[uid] }

func (w *dsWatch) uids() []string {
	var out []string
	for _, p := range w.polls {
		for _, u := range p.pods {
			if !slices.Contains(out, u) {
				out = append(out, u)
			}
		}
	}
	return out
}

// podPIDsByComm lists the processes in a pod's cgroup (kubepods) whose comm (at most 15 characters)
// starts with prefix: not an exporter the machine itself may run.
func podPIDsByComm(prefix string) []string {
	entries, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "comm"))
		if err != nil || !strings.HasPrefix(strings.TrimSpace(string(b)), prefix) {
			continue
		}
		if cg, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cgroup")); err == nil && strings.Contains(string(cg), "kubepods") {
			out = append(out, e.Name())
		}
	}
	return out
}
