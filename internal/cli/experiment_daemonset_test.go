package cli

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/tare-dev/tare/internal/compare"
	"github.com/tare-dev/tare/internal/deploy"
	"github.com/tare-dev/tare/internal/experiment"
	"github.com/tare-dev/tare/internal/kube"
	"github.com/tare-dev/tare/internal/record"
	"github.com/tare-dev/tare/internal/testload"
)

// TestExperimentDaemonSetOnLab runs the ready-made node-exporter spec (examples/experiments) with the
// tare-agent spec's variant added, cut to two short trials a variant, on a one-node lab. Ground truth that
// is not tare's counter: the DaemonSets' pods as the API server lists them, polled by the test (Ready
// through every window of their variant, absent from every other window, and their cgroups and processes
// gone at the end), and each pod's own cgroup CPU (cpuacct.usage or cpu.stat, traced every 10 ms) over the
// trial's window, which the per-pod CPU tare reports must match. And tare measuring its own agent this way
// agrees with what the agent reports of itself (tare_self_cpu_seconds_total, scraped by the test with a
// token of the metrics reader's role). About 2 min: the lab's start and settle (25 s), two 6 s baseline
// trials, two trials of each DaemonSet of about 20 s (the exporters image built and imported by the first,
// the pod Ready, the window, the namespace deleted and the pod waited out).
func TestExperimentDaemonSetOnLab(t *testing.T) {
	requireLab(t)
	spec, err := experiment.Load("../../examples/experiments/node-exporter.yaml")
	if err != nil {
		t.Fatal(err)
	}
	agentSpec, err := experiment.Load("../../examples/experiments/tare-agent.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range agentSpec.Variants {
		if !v.Baseline {
			spec.Variants = append(spec.Variants, v)
		}
	}
	spec.Trials, spec.Warmup.Duration, spec.Window.Duration = 2, time.Second, 6*time.Second
	// Busier than shipped, so that each pod burns CPU enough in a 6 s window for the comparisons to say
	// something: the exporter scraped every second instead of every 15 s (its readiness probe), the agent
	// sampling every 100 ms instead of every second.
	busier := map[string][2]string{
		"node-exporter.yaml": {"periodSeconds: 15", "periodSeconds: 1"},
		"tare-agent.yaml":    {"--interval=1s", "--interval=100ms"},
	}
	for i, v := range spec.Variants {
		for j, m := range v.Manifests {
			b, err := os.ReadFile(m)
			if err != nil {
				t.Fatal(err)
			}
			r, ok := busier[filepath.Base(m)]
			busy := strings.Replace(string(b), r[0], r[1], 1)
			if !ok || busy == string(b) {
				t.Fatalf("%s: no %q to make busier", m, r[0])
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
	path := filepath.Join(t.TempDir(), "daemonsets.yaml")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "ds")
	kc := filepath.Join(out, "lab", "kubeconfig")
	watches := map[string]*dsWatch{
		"node-exporter": watchDaemonSetPods(kc, "node-exporter", 0),
		"tare-agent":    watchDaemonSetPods(kc, "tare", deploy.DefaultPort),
	}
	stdout, stderr, err := run(context.Background(), "experiment", path, "--out", out, "--lab-dir", t.TempDir(), "-o", "json")
	for _, w := range watches {
		w.stop()
	}
	if err != nil {
		t.Fatalf("experiment: %v\n%s", err, stderr)
	}
	t.Log(stderr)
	r := decodeResults(t, stdout)
	assertNoLab(t, out)
	if len(r.Trials) != 6 {
		t.Fatalf("%d trials, want 6", len(r.Trials))
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
		for variant, w := range watches {
			if variant == tr.Variant {
				continue
			}
			for _, s := range w.during(from, to) {
				if len(s.pods) > 0 {
					t.Errorf("trial %d (%s): %s pods %v exist at %s, inside its window", tr.Seq, tr.Variant, variant, s.pods, s.at)
				}
			}
		}
		if tr.Variant == "none" {
			if tr.Metrics[compare.DaemonSetPods] != 0 || tr.Metrics[compare.DaemonSetPodCPU] != 0 {
				t.Errorf("trial %d (baseline): daemonset metrics %v, want zeros", tr.Seq, tr.Metrics)
			}
			continue
		}
		w := watches[tr.Variant]
		if w == nil {
			t.Fatalf("trial %d: variant %q unknown to the test", tr.Seq, tr.Variant)
		}
		seen := w.during(from, to)
		if len(seen) == 0 {
			t.Fatalf("trial %d (%s): the test's poll saw nothing in its window %s–%s", tr.Seq, tr.Variant, from, to)
		}
		uid := ""
		for _, s := range seen {
			if len(s.pods) != 1 || len(s.ready) != 1 || (uid != "" && s.pods[0] != uid) {
				t.Fatalf("trial %d (%s): at %s the pods are %v, Ready %v: want the one pod Ready through the window", tr.Seq, tr.Variant, s.at, s.pods, s.ready)
			}
			uid = s.pods[0]
		}
		if n := tr.Metrics[compare.DaemonSetPods]; n != 1 {
			t.Errorf("trial %d (%s): %v pods measured, want the lab's one node's", tr.Seq, tr.Variant, n)
		}
		trace := w.trace(uid)
		if trace == nil {
			t.Fatalf("trial %d (%s): pod %s was never traced", tr.Seq, tr.Variant, uid)
		}
		want, ok := trace.Between(from, to)
		if !ok {
			t.Fatalf("trial %d (%s): the cgroup trace of pod %s does not cover the window", tr.Seq, tr.Variant, uid)
		}
		got := tr.Metrics[compare.DaemonSetPodCPU]
		t.Logf("trial %d (%s): tare credits the pod %.2fm (node %.2fm, %.1f MiB), its cgroup used %.2fm", tr.Seq, tr.Variant, got,
			tr.Metrics[compare.DaemonSetNodeCPU], tr.Metrics[compare.DaemonSetPodMemory], want)
		// As checkPodCPU: tare reads the tasks one by one, the cgroup counts them all at once.
		if want < 1 {
			t.Errorf("trial %d (%s): the pod's cgroup used %.2fm: too little for the comparison to say anything", tr.Seq, tr.Variant, want)
		}
		if !within(got, want, 0.25, 2) {
			t.Errorf("trial %d (%s): tare credits the pod %.2fm, its cgroup used %.2fm over the same window: want within 25%% + 2m", tr.Seq, tr.Variant, got, want)
		}
		if mem := tr.Metrics[compare.DaemonSetPodMemory]; mem <= 0 {
			t.Errorf("trial %d (%s): the pod's memory is %.1f MiB", tr.Seq, tr.Variant, mem)
		}
		if w.self == nil {
			continue
		}
		// The agent's own account of itself, read from its metrics with the times of its samples.
		self, ok := w.self.Between(from, to)
		if !ok {
			t.Fatalf("trial %d (%s): the agent's tare_self_cpu_seconds_total %s does not cover the window (last scrape: %v)", tr.Seq, tr.Variant, w.self, w.scrapeErr)
		}
		t.Logf("trial %d (%s): the agent reports its own CPU as %.2fm", tr.Seq, tr.Variant, self)
		if !within(got, self, 0.25, 2) {
			t.Errorf("trial %d (%s): tare credits the agent's pod %.2fm, the agent reports its own CPU as %.2fm over the same window: want within 25%% + 2m", tr.Seq, tr.Variant, got, self)
		}
	}
	// Gone after: no pod cgroup and no exporter or agent process is left.
	for _, w := range watches {
		for _, uid := range w.uids() {
			if dir, ok := findPodCgroup(uid); ok {
				t.Errorf("pod %s's cgroup %s is still there after the experiment", uid, dir)
			}
		}
	}
	for _, comm := range []string{"prometheus-node", "tare"} {
		if pids := podPIDsByComm(comm); len(pids) > 0 {
			t.Errorf("%s processes %v are left in pods after the experiment", comm, pids)
		}
	}
	if x, ok := row(r, compare.DaemonSetNodeCPU); !ok || len(x.Cells) != 3 || x.Cells[1].Shift == nil || x.Cells[2].Shift == nil {
		t.Errorf("no daemonset-node-cpu comparison of both DaemonSets: %+v", x)
	}
}

// within says whether got is within frac of want plus abs.
func within(got, want, frac, abs float64) bool {
	return got-want <= frac*want+abs && want-got <= frac*want+abs
}

// dsPoll is one look at a DaemonSet's pods: all of them and the Ready ones, by UID.
type dsPoll struct {
	at          time.Time
	pods, ready []string
}

// dsWatch polls the pods of a namespace every 200 ms, once the experiment's lab runs, and traces the
// cgroup of every pod it sees running. With an agent port, it also scrapes tare's agent there (on the
// node, which is this machine) whenever a pod is Ready, and traces the agent's own CPU.
type dsWatch struct {
	mu     sync.Mutex
	polls  []dsPoll
	traces map[string]*testload.UsageTrace
	cancel context.CancelFunc
	done   chan struct{}

	agentPort int
	client    *http.Client // one for every scrape (its connections are reused)
	token     string
	self      *testload.UsageTrace // the agent's tare_self_cpu_seconds_total at its samples' times
	scrapeErr error
}

func watchDaemonSetPods(kubeconfig, namespace string, agentPort int) *dsWatch {
	ctx, cancel := context.WithCancel(context.Background())
	w := &dsWatch{traces: map[string]*testload.UsageTrace{}, cancel: cancel, done: make(chan struct{}), agentPort: agentPort}
	if agentPort != 0 {
		w.self = testload.NewPointTrace()
		w.client = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // the agent's certificate is self-made
	}
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
	if w.self != nil && len(p.ready) > 0 {
		w.scrapeErr = w.scrapeSelf(ctx, cs)
	}
}

// scrapeSelf reads the agent's own CPU and the time of the sample it is from, as a reader of its metrics
// (a ServiceAccount bound to the agent's metrics reader role, made at the first scrape) would.
func (w *dsWatch) scrapeSelf(ctx context.Context, cs kubernetes.Interface) error {
	if w.token == "" {
		tok, err := readerToken(ctx, cs, "ds-scraper", deploy.MetricsReaderRole)
		if err != nil {
			return err
		}
		w.token = tok
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+net.JoinHostPort("127.0.0.1", strconv.Itoa(w.agentPort))+"/metrics", nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+w.token)
	resp, err := w.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	var self, at float64
	var haveSelf, haveAt bool
	for line := range strings.SplitSeq(string(body), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		v, err := strconv.ParseFloat(f[1], 64)
		switch {
		case err != nil:
		case f[0] == "tare_self_cpu_seconds_total":
			self, haveSelf = v, true
		case f[0] == "tare_last_sample_timestamp_seconds":
			at, haveAt = v, true
		}
	}
	if !haveSelf || !haveAt {
		return fmt.Errorf("no tare_self_cpu_seconds_total or tare_last_sample_timestamp_seconds in /metrics")
	}
	w.self.Record(time.Unix(0, int64(at*1e9)), time.Duration(self*1e9))
	return nil
}

// readerToken makes a ServiceAccount in default, bound to the ClusterRole role unless role is "" (a
// ClusterRoleBinding of the account's name), and returns a token of it that lasts 10 minutes.
func readerToken(ctx context.Context, cs kubernetes.Interface, name, role string) (string, error) {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := cs.CoreV1().ServiceAccounts("default").Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", err
	}
	if role == "" {
		return accountTokenOnly(ctx, cs, name)
	}
	b := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: "default"}},
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, b, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", err
	}
	return accountTokenOnly(ctx, cs, name)
}

// accountTokenOnly returns a token of the ServiceAccount name in default that lasts 10 minutes.
func accountTokenOnly(ctx context.Context, cs kubernetes.Interface, name string) (string, error) {
	tr, err := cs.CoreV1().ServiceAccounts("default").CreateToken(ctx, name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: new(int64(600))}}, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	return tr.Status.Token, nil
}

func (w *dsWatch) stop() {
	w.cancel()
	<-w.done
	for _, tr := range w.traces {
		tr.Stop()
	}
	if w.client != nil {
		w.client.CloseIdleConnections()
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
