package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/procfs"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/tare-dev/tare/internal/kube"
	"github.com/tare-dev/tare/internal/lab"
	"github.com/tare-dev/tare/internal/lab/labtest"
)

// requireLab skips without root or in -short mode and makes sure every lab component is installed
// (built into the cache the first time: minutes on a fresh machine), and stops the shared lab: the test
// starts a lab of its own, or none.
func requireLab(t *testing.T) {
	t.Helper()
	checkLab(t)
	_ = stopSharedLab(t)
}

// checkLab is requireLab without stopping the shared lab (sharedLab's check).
func checkLab(t *testing.T) {
	t.Helper()
	requireRoot(t)
	if testing.Short() {
		t.Skip("starts a real cluster")
	}
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Fatal("the lab tests drive the cluster with the real kubectl: install it (apt-get install kubectl)")
	}
	if _, errOut, err := run(context.Background(), "lab", "install"); err != nil {
		t.Fatalf("lab install: %v\n%s", err, errOut)
	}
}

// labUp starts a lab with tare lab up FLAGS in a new directory (labtest.TempDir: stopped and removed after
// the test), once no other lab holds the lab's ports, and returns the directory, its kubeconfig and what
// up printed.
func labUp(ctx context.Context, t *testing.T, flags ...string) (dir, kubeconfig, out string) {
	t.Helper()
	dir = labtest.TempDir(t)
	labtest.WaitForPorts(ctx, t)
	out, errOut, err := run(ctx, append([]string{"lab", "up", "--dir", dir}, flags...)...)
	if err != nil {
		t.Fatalf("lab up %s: %v\nstderr:\n%s", strings.Join(flags, " "), err, errOut)
	}
	return dir, filepath.Join(dir, "kubeconfig"), out
}

// clientsetOf is a typed client of the cluster kubeconfig kc names.
func clientsetOf(t *testing.T, kc string) kubernetes.Interface {
	t.Helper()
	c, err := kube.NewClient(kc, kube.Options{Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	cs, err := c.Clientset()
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func kubectl(t *testing.T, kubeconfig string, args ...string) string {
	t.Helper()
	cmd := exec.Command("kubectl", append([]string{"--kubeconfig", kubeconfig}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

const webManifest = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: web
        image: tare.lab/web:v1
        imagePullPolicy: Never
        ports: [{containerPort: 8080}]
        readinessProbe: {httpGet: {path: /healthz, port: 8080}, periodSeconds: 1}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080}]
---
apiVersion: v1
kind: Pod
metadata: {name: on-kwok}
spec:
  nodeSelector: {type: kwok}
  tolerations: [{key: kwok.x-k8s.io/node, operator: Exists, effect: NoSchedule}]
  containers: [{name: app, image: tare.lab/web:v1}]
`

// TestLabStatusWithoutLab: status answers without a lab, in either format, and fails with the reason;
// a format it does not have is refused as a usage error.
func TestLabStatusWithoutLab(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out, errOut, err := run(context.Background(), "lab", "status", "--dir", dir, "-o", "json")
	if !errors.Is(err, lab.ErrNotRunning) {
		t.Errorf("status without a lab: %v, want no lab", err)
	}
	var st map[string]any
	if jerr := json.Unmarshal([]byte(out), &st); jerr != nil {
		t.Fatalf("status -o json without a lab is not JSON: %v\n%s", jerr, out)
	}
	if st["exists"] != false || st["dir"] != dir {
		t.Errorf("status -o json without a lab: %v", st)
	}
	if !strings.Contains(errOut, "no lab in "+dir) {
		t.Errorf("stderr does not say there is no lab: %q", errOut)
	}
	out, _, err = run(context.Background(), "lab", "status", "--dir", dir)
	if !errors.Is(err, lab.ErrNotRunning) || out != "no lab in "+dir+"\n" {
		t.Errorf("status without a lab: %v, stdout %q", err, out)
	}
	out, _, err = run(context.Background(), "lab", "status", "--dir", dir, "-o", "yaml")
	var ec ExitCoder
	if !errors.As(err, &ec) || ec.ExitCode() != 2 || out != "" {
		t.Errorf("status -o yaml: %v (want exit 2), stdout %q", err, out)
	}
}

// TestLab starts one real lab (tuned, audited, with kwok nodes) and checks everything the issue names
// against it: a Deployment behind a Service reached through its ClusterIP, scaled to 10; a pod on a
// kwok node; the tuned profile's effect on leases; the audit log; status, env, logs; measure naming
// every lab process; and a down that leaves nothing behind.
func TestLab(t *testing.T) {
	requireLab(t)
	ctx := context.Background()
	labtest.WaitForPorts(ctx, t) // the sysctls before are the machine's own, not another lab's
	sysctlsBefore := readProcSys(t)
	dir, kc, out := labUp(ctx, t, "--profile", "tuned", "--audit", "--kwok-nodes", "2")
	for _, want := range []string{"etcd healthy", "kube-apiserver ready", "node Ready", "2 kwok nodes Ready", "probe pod Running",
		"kube-controller-manager --leader-elect=false", "minikube measured 18%", "audit log: " + filepath.Join(dir, "audit", "audit.log"),
		"export KUBECONFIG=" + kc} {
		if !strings.Contains(out, want) {
			t.Errorf("lab up output lacks %q:\n%s", want, out)
		}
	}

	t.Run("up twice says it is running", func(t *testing.T) {
		_, _, err := run(ctx, "lab", "up", "--dir", dir)
		if err == nil || !strings.Contains(err.Error(), "already running in "+dir) {
			t.Errorf("second up: %v", err)
		}
	})
	t.Run("status env logs", func(t *testing.T) {
		out, _, err := run(ctx, "lab", "status", "--dir", dir)
		if err != nil {
			t.Fatalf("status: %v\n%s", err, out)
		}
		// The lab's daemons, from the kernel: lab up ran in this process, so they are its children.
		procs := labChildren(t, dir)
		t.Logf("the lab's processes: %v", procs)
		if diff := cmp.Diff(procs, statusRows(out)); diff != "" {
			t.Errorf("status's components are not the lab's running processes (-/proc +status):\n%s\n%s", diff, out)
		}
		for _, want := range []string{": ready", "node kwok-node-1 (kwok): Ready"} {
			if !strings.Contains(out, want) {
				t.Errorf("status lacks %q:\n%s", want, out)
			}
		}
		env, _, err := run(ctx, "lab", "env", "--dir", dir)
		if err != nil || !strings.Contains(env, "export KUBECONFIG="+kc+"\n") {
			t.Errorf("env: %q, %v", env, err)
		}
		out, _, err = run(ctx, "lab", "status", "--dir", dir, "-o", "json")
		var st labStatus
		if err != nil || json.Unmarshal([]byte(out), &st) != nil || !st.Exists || st.StatusReport == nil || !st.Healthy {
			t.Fatalf("status -o json: %v\n%s", err, out)
		}
		listed := map[int]string{}
		for _, c := range st.Components {
			state := " running"
			if !c.Running {
				state = " not running"
			}
			listed[c.PID] = c.Name + state
		}
		nodes := map[string]bool{}
		for _, n := range st.Nodes {
			nodes[n.Name] = n.Ready
		}
		if diff := cmp.Diff(procs, listed); diff != "" {
			t.Errorf("status -o json's components are not the lab's running processes (-/proc +status):\n%s", diff)
		}
		if diff := cmp.Diff(readyNodes(t, kc), nodes); diff != "" {
			t.Errorf("status -o json's nodes are not the API's (-kubectl +status):\n%s", diff)
		}
		out, _, err = run(ctx, "lab", "env", "--dir", dir, "-o", "json")
		var e struct{ Kubeconfig, Dir string }
		if err != nil || json.Unmarshal([]byte(out), &e) != nil || e.Kubeconfig != kc || e.Dir != dir {
			t.Errorf("env -o json: %v\n%s", err, out)
		}
		logs, _, err := run(ctx, "lab", "logs", "kube-apiserver", "--tail", "5", "--dir", dir)
		if err != nil || strings.Count(logs, "\n") != 5 {
			t.Errorf("logs --tail 5: %v\n%q", err, logs)
		}
		if _, _, err := run(ctx, "lab", "logs", "nope", "--dir", dir); err == nil || !strings.Contains(err.Error(), "kube-apiserver") {
			t.Errorf("logs of an unknown component should list the known ones: %v", err)
		}
	})
	t.Run("deployment behind a service, scaled to 10", func(t *testing.T) {
		apply := exec.Command("kubectl", "--kubeconfig", kc, "apply", "-f", "-")
		apply.Stdin = strings.NewReader(webManifest)
		if b, err := apply.CombinedOutput(); err != nil {
			t.Fatalf("kubectl apply: %v\n%s", err, b)
		}
		kubectl(t, kc, "rollout", "status", "deployment/web", "--timeout=120s")
		pods := strings.Fields(kubectl(t, kc, "get", "pods", "-l", "app=web", "-o", "jsonpath={.items[*].metadata.name}"))
		if len(pods) != 3 {
			t.Fatalf("pods = %v, want 3", pods)
		}
		ip := kubectl(t, kc, "get", "service", "web", "-o", "jsonpath={.spec.clusterIP}")
		answered := map[string]int{}
		client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
		// kube-proxy programs the service a moment after the endpoints are ready.
		for reach := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
			resp, err := client.Get("http://" + ip + "/")
			if err == nil {
				resp.Body.Close()
				break
			}
			if time.Now().After(reach) {
				t.Fatalf("ClusterIP %s not reachable after 30 s: %v", ip, err)
			}
		}
		// Every answer must come from a pod of the deployment; kube-proxy adds endpoints as they become
		// ready, so keep asking (new connection each time) until several pods have answered.
		deadline, odd := time.Now().Add(30*time.Second), 0
		for i := 0; i < 30 || (len(answered) < 2 && time.Now().Before(deadline)); i++ {
			resp, err := client.Get(fmt.Sprintf("http://%s/req%d", ip, i))
			if err != nil {
				t.Fatalf("GET through ClusterIP %s: %v", ip, err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			host, path, _ := strings.Cut(strings.TrimSpace(string(b)), " ")
			if path != fmt.Sprintf("/req%d", i) {
				// Seen once in many runs: an empty 200 right after the rollout. Logged, and tolerated once.
				t.Logf("unexpected answer %s %q to /req%d", resp.Status, b, i)
				if odd++; odd > 1 {
					t.Fatalf("%d answers through the ClusterIP were not from the app", odd)
				}
				continue
			}
			answered[host]++
			if i >= 30 {
				time.Sleep(100 * time.Millisecond)
			}
		}
		for host := range answered {
			if !strings.Contains(strings.Join(pods, " "), host) {
				t.Errorf("%s answered but is not a pod of the deployment %v", host, pods)
			}
		}
		if len(answered) < 2 {
			t.Errorf("connections through the ClusterIP all reached one pod (%v) for 30 s: not load-balanced", answered)
		}
		kubectl(t, kc, "scale", "deployment/web", "--replicas=10")
		kubectl(t, kc, "rollout", "status", "deployment/web", "--timeout=180s")
		ready := kubectl(t, kc, "get", "deployment", "web", "-o", "jsonpath={.status.readyReplicas}")
		endpoints := strings.Fields(kubectl(t, kc, "get", "endpoints", "web", "-o", "jsonpath={.subsets[*].addresses[*].ip}"))
		if ready != "10" || len(endpoints) != 10 {
			t.Errorf("after scaling: %s ready, %d endpoints; want 10 and 10", ready, len(endpoints))
		}
	})
	t.Run("pod on a kwok node", func(t *testing.T) {
		kubectl(t, kc, "wait", "--for=condition=Ready", "pod/on-kwok", "--timeout=60s")
		if node := kubectl(t, kc, "get", "pod", "on-kwok", "-o", "jsonpath={.spec.nodeName}"); !strings.HasPrefix(node, "kwok-node-") {
			t.Errorf("on-kwok ran on %q", node)
		}
	})
	t.Run("tuned profile: no leader-election leases", func(t *testing.T) {
		leases := kubectl(t, kc, "get", "leases", "-n", "kube-system", "-o", "jsonpath={.items[*].metadata.name}")
		if strings.Contains(leases, "kube-controller-manager") || strings.Contains(leases, "kube-scheduler") {
			t.Errorf("leader-election leases exist with the tuned profile: %s", leases)
		}
	})
	t.Run("audit log at Metadata level", func(t *testing.T) {
		assertAuditCreate(t, filepath.Join(dir, "audit", "audit.log"), "deployments")
	})
	t.Run("pprof on every component", func(t *testing.T) {
		targets, err := mustOpen(t, dir).PprofTargets()
		if err != nil {
			t.Fatal(err)
		}
		if len(targets) != 7 {
			t.Errorf("%d pprof targets, want etcd, apiserver, controller manager, scheduler, kubelet, kube-proxy, containerd", len(targets))
		}
		for _, e := range targets {
			e.Client.Timeout = 10 * time.Second
			url := e.Base + "/debug/pprof/goroutine?debug=1"
			resp, err := e.Client.Get(url)
			if err != nil {
				t.Errorf("%s pprof: %v", e.Component, err)
				continue
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), "goroutine") {
				t.Errorf("%s pprof at %s: %s %.200s", e.Component, url, resp.Status, b)
			}
		}
	})
	t.Run("explain: tuned has no leader election to cut", func(t *testing.T) {
		r, _ := explainJSON(t, "--lab-dir", dir, "--duration", "10s", "--pprof", "none")
		if r.API.Audit == nil || r.API.Audit.Requests == 0 {
			t.Fatalf("no audit view of the tuned lab: %+v", r.API)
		}
		for _, l := range r.API.Audit.LeaderElection {
			if strings.HasPrefix(l.Client, "kube-controller-manager") || strings.HasPrefix(l.Client, "kube-scheduler") {
				t.Errorf("tuned lab renews a leader lease: %+v", l)
			}
		}
		for _, f := range r.Findings {
			if strings.HasPrefix(f.ID, "leader-election") {
				t.Errorf("tuned lab has a leader-election finding: %+v", f)
			}
		}
	})
	t.Run("explain without an audit log reads the API server's counters", func(t *testing.T) {
		// The test's own requests, which nothing else in the lab makes (GETs of one absent pod template),
		// five a second through the whole explain, and the API server's own counters read by the test
		// around it: explain's figures must lie within what the test sent and saw.
		cs := clientsetOf(t, kc)
		before := scrapeRequests(t, cs)
		gets := startGets(cs)
		r, _ := explainJSON(t, "--lab-dir", dir, "--duration", "5s", "--pprof", "none", "--audit", "none")
		sent := gets.stop()
		after := scrapeRequests(t, cs)
		m := r.API.Metrics
		if m == nil || !strings.Contains(m.Missing, "audit") || !strings.Contains(r.API.Missing, "--audit-log-path") {
			t.Fatalf("metrics view: %+v, missing %q", m, r.API.Missing)
		}
		inWindow := sent.within(r.Window.Start, r.Window.End)
		var row float64
		for _, x := range m.Rows {
			if x.Verb == "GET" && x.Resource == "podtemplates" {
				row = x.Requests
			}
		}
		t.Logf("explain: %.0f requests, %.0f GETs of pod templates; the test sent %d (%d inside the window), the API server counted %.0f (%.0f in all)",
			m.Requests, row, len(sent), inWindow, after.podTemplateGets-before.podTemplateGets, after.all-before.all)
		if got := after.podTemplateGets - before.podTemplateGets; got != float64(len(sent)) {
			t.Errorf("the API server counted %.0f GETs of pod templates, the test sent %d: someone else sends them", got, len(sent))
		}
		if row < float64(inWindow) || row > float64(len(sent)) {
			t.Errorf("explain counts %.0f GETs of pod templates; the test sent %d, %d of them inside the window", row, len(sent), inWindow)
		}
		if m.Requests < row || m.Requests > after.all-before.all {
			t.Errorf("explain counts %.0f requests, the API server %.0f from before explain to after it", m.Requests, after.all-before.all)
		}
	})
	t.Run("measure names every lab process", func(t *testing.T) {
		s := measureJSON(t, "--duration", "3s", "--kubeconfig", kc)
		groups := map[string]bool{}
		for _, g := range s.Groups {
			groups[g.Name] = true
		}
		for _, c := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "kube-proxy", "containerd", "containerd-shim", "kwok"} {
			if !groups[c] {
				t.Errorf("measure has no %s group: %v", c, groups)
			}
		}
		// Every pod of the deployment, as the API lists them, is a group of its own named namespace/name,
		// and no other group claims to be one.
		want, named := map[string]bool{}, map[string]bool{}
		for _, p := range strings.Fields(kubectl(t, kc, "get", "pods", "-l", "app=web", "-o", "name")) {
			want["pod default/"+strings.TrimPrefix(p, "pod/")] = true
		}
		for g := range groups {
			if strings.HasPrefix(g, "pod default/web-") {
				named[g] = true
			}
		}
		if diff := cmp.Diff(want, named); diff != "" || len(want) != 10 {
			t.Errorf("the web pods' groups are not the deployment's 10 pods (-kubectl +measure):\n%s", diff)
		}
	})

	out, errOut, err := run(ctx, "lab", "down", "--dir", dir)
	if err != nil {
		t.Fatalf("lab down: %v\n%s%s", err, out, errOut)
	}
	if left := lab.Leftovers(dir, true); len(left) > 0 {
		t.Errorf("left after down: %v", left)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("%s still exists after down: %v", dir, err)
	}
	if after := readProcSys(t); fmt.Sprint(after) != fmt.Sprint(sysctlsBefore) {
		t.Errorf("sysctls changed by the lab: before %v, after %v", sysctlsBefore, after)
	}
}

// labChildren are this process's children whose command line names the lab directory dir, from /proc:
// the lab's daemons when lab up ran in this process (containerd's shims leave for init). Each is
// "EXE running" by PID, EXE the base name of the file it runs (/proc/PID/exe).
func labChildren(t *testing.T, dir string) map[int]string {
	t.Helper()
	procs, err := procfs.AllProcs()
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]string{}
	for _, p := range procs {
		st, err := p.Stat()
		if err != nil || st.PPID != os.Getpid() || st.State == "Z" {
			continue
		}
		args, _ := p.CmdLine()
		exe, err := p.Executable()
		if err == nil && slices.ContainsFunc(args, func(a string) bool { return strings.Contains(a, dir+"/") || a == dir }) {
			out[p.PID] = filepath.Base(exe) + " running"
		}
	}
	return out
}

// statusRows are the rows of lab status's component table: "NAME STATE" by PID.
func statusRows(out string) map[int]string {
	rows := map[int]string{}
	_, table, _ := strings.Cut(out, "COMPONENT")
	for _, line := range strings.Split(table, "\n")[1:] {
		f := strings.Fields(line)
		if len(f) < 3 {
			break
		}
		pid, err := strconv.Atoi(f[1])
		if err != nil {
			break
		}
		rows[pid] = f[0] + " " + strings.Join(f[2:], " ")
	}
	return rows
}

// readyNodes are the cluster's nodes and whether each is Ready, as kubectl lists them.
func readyNodes(t *testing.T, kubeconfig string) map[string]bool {
	t.Helper()
	out := kubectl(t, kubeconfig, "get", "nodes", "-o", `jsonpath={range .items[*]}{.metadata.name} {.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}`)
	nodes := map[string]bool{}
	for _, line := range strings.Split(out, "\n") {
		name, status, _ := strings.Cut(line, " ")
		nodes[name] = status == "True"
	}
	return nodes
}

// requestCounts is what kube-apiserver's own apiserver_request_total says it served: in all, and GETs of
// pod templates.
type requestCounts struct{ all, podTemplateGets float64 }

// scrapeRequests reads apiserver_request_total from the API server's /metrics.
func scrapeRequests(t *testing.T, cs kubernetes.Interface) requestCounts {
	t.Helper()
	b, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	var c requestCounts
	for _, m := range families["apiserver_request_total"].GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		c.all += m.GetCounter().GetValue()
		if labels["verb"] == "GET" && labels["resource"] == "podtemplates" && labels["group"] == "" {
			c.podTemplateGets += m.GetCounter().GetValue()
		}
	}
	return c
}

// getStream GETs an absent pod template five times a second until stopped.
type getStream struct {
	quit, done chan struct{}
	sent       getSpans
}

// getSpan is when one GET was sent and when its answer came.
type getSpan struct{ start, end time.Time }

type getSpans []getSpan

func startGets(cs kubernetes.Interface) *getStream {
	g := &getStream{quit: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(g.done)
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			start := time.Now()
			_, err := cs.CoreV1().PodTemplates(metav1.NamespaceDefault).Get(context.Background(), "tare-test-absent", metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				g.sent = append(g.sent, getSpan{start, time.Now()})
			}
			select {
			case <-g.quit:
				return
			case <-tick.C:
			}
		}
	}()
	return g
}

// stop ends the stream and returns the GETs that were answered (not found).
func (g *getStream) stop() getSpans {
	close(g.quit)
	<-g.done
	return g.sent
}

// within counts the GETs sent and answered between a and b.
func (s getSpans) within(a, b time.Time) int {
	n := 0
	for _, x := range s {
		if !x.start.Before(a) && !x.end.After(b) {
			n++
		}
	}
	return n
}

func readProcSys(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, k := range []string{"vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic", "kernel/panic_on_oops", "net/ipv4/ip_forward"} {
		b, err := os.ReadFile("/proc/sys/" + k)
		if err == nil {
			out[k] = strings.TrimSpace(string(b))
		}
	}
	return out
}

// assertAuditCreate checks every audit event is at Metadata level (no request bodies) and that exactly
// one create of resource completed: the one the test made.
func assertAuditCreate(t *testing.T, path, resource string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<22)
	found := 0
	for sc.Scan() {
		var ev struct {
			Level, Verb, Stage string
			ObjectRef          struct{ Resource string }
			RequestObject      json.RawMessage
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("audit line is not JSON: %v: %.200s", err, sc.Text())
		}
		if ev.Level != "Metadata" || ev.RequestObject != nil {
			t.Fatalf("audit event above Metadata level: %.300s", sc.Text())
		}
		if ev.Verb == "create" && ev.ObjectRef.Resource == resource && ev.Stage == "ResponseComplete" {
			found++
		}
	}
	if found != 1 {
		t.Errorf("audit log has %d completed creates of %s, want exactly the 1 the test made", found, resource)
	}
}

// labState is the state of the lab in dir (lab.Open's), for tests that look into it.
func labState(dir string) (*lab.State, error) {
	l, err := lab.Open(dir)
	if err != nil {
		return nil, err
	}
	return l.State, nil
}

// mustOpen opens the lab in dir, failing the test without one.
func mustOpen(t *testing.T, dir string) *lab.Lab {
	t.Helper()
	l, err := lab.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// statusOf is the status of the lab in dir.
func statusOf(ctx context.Context, dir string) (*lab.StatusReport, error) {
	l, err := lab.Open(dir)
	if err != nil {
		return nil, err
	}
	return l.Status(ctx)
}
