package cli

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tare-dev/tare/internal/explain"
	"github.com/tare-dev/tare/internal/lab"
	"github.com/tare-dev/tare/internal/testload"
)

// Secrets planted where explain reads: the poller's command line, an API client's user agent and a
// request's query string. None may appear in any output.
var explainSecrets = []string{"sekret-poller-flag", "sekret-ua-token", "sekret-query"}

func explainJSON(t *testing.T, args ...string) (explain.Report, string) {
	t.Helper()
	out, errOut, err := run(context.Background(), append([]string{"explain", "-o", "json"}, args...)...)
	if err != nil {
		t.Fatalf("explain: %v\nstderr:\n%s", err, errOut)
	}
	var r explain.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("explain -o json: %v\n%.2000s", err, out)
	}
	return r, out + errOut
}

// startPoller runs `kubectl apply -f DIR` every 5 s against the lab, as minikube's addon manager did.
func startPoller(t *testing.T, kubeconfig string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "cm.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: polled}\ndata: {a: b}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf("while :; do kubectl --kubeconfig %s apply -f %s >/dev/null 2>&1 & sleep 5; done # --token=%s", kubeconfig, dir, explainSecrets[0])
	cmd := exec.Command("bash", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
}

// leakyClient sends a request whose user agent and query string carry secrets, so they land in the
// audit log.
func leakyClient(dir string) error {
	pki, err := lab.LoadPKI(filepath.Join(dir, "pki"))
	if err != nil {
		return err
	}
	c, err := pki.HTTPClient("admin")
	if err != nil {
		return err
	}
	st, err := labState(dir)
	if err != nil {
		return err
	}
	req, err := http.NewRequest(http.MethodGet, st.Server+"/api/v1/namespaces/default/configmaps?token="+explainSecrets[2], nil)
	if err != nil {
		return err
	}
	req.Header.Set("User-Agent", "leaky/1.0 Authorization: Bearer "+explainSecrets[1])
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	return resp.Body.Close()
}

func assertNoSecrets(t *testing.T, what, out string) {
	t.Helper()
	for _, s := range explainSecrets {
		if strings.Contains(out, s) {
			t.Errorf("%s leaks %q", what, s)
		}
	}
}

// TestExplainUpstreamLab: the upstream profile's leader-election renewals are found in the audit log and
// the fix recommended; a real poller is found with its period, command line and share; the API server's
// profile has a top and a flame graph; no planted secret reaches the output.
func TestExplainUpstreamLab(t *testing.T) {
	requireLab(t)
	ctx := context.Background()
	dir, kc, _ := labUp(ctx, t, "--profile", "upstream", "--audit")
	// Two DNS replicas on a one-node cluster, as kubeadm deploys CoreDNS (the lab's web image stands in).
	kubectlApply(t, kc, `apiVersion: apps/v1
kind: Deployment
metadata: {name: coredns, namespace: kube-system, labels: {k8s-app: kube-dns}}
spec:
  replicas: 2
  selector: {matchLabels: {k8s-app: kube-dns}}
  template:
    metadata: {labels: {k8s-app: kube-dns}}
    spec:
      terminationGracePeriodSeconds: 0
      containers: [{name: coredns, image: tare.lab/web:v1, imagePullPolicy: Never}]
`)
	startPoller(t, kc)
	leaked := make(chan error, 1)
	time.AfterFunc(5*time.Second, func() { leaked <- leakyClient(dir) }) // inside the window, so it is counted
	page := filepath.Join(t.TempDir(), "explain.html")
	flames := strings.TrimSuffix(page, ".html") + "-flames" // next to --html when no --flames is given
	r, out := explainJSON(t, "--lab-dir", dir, "--duration", "30s", "--interval", "500ms",
		"--pprof", "kube-apiserver,etcd", "--html", page)
	if err := <-leaked; err != nil {
		t.Fatalf("the leaky client: %v", err)
	}
	var table strings.Builder
	if err := r.Table(&table); err != nil {
		t.Fatal(err)
	}
	assertNoSecrets(t, "explain -o json", out)
	assertNoSecrets(t, "explain table", table.String())
	t.Log("\n" + table.String())

	t.Run("leader election", func(t *testing.T) {
		a := r.API.Audit
		if a == nil {
			t.Fatalf("no audit view: %+v", r.API)
		}
		leaky := false
		for _, c := range a.Clients {
			leaky = leaky || strings.HasPrefix(c.Name, "leaky")
		}
		if !leaky {
			t.Errorf("the client with a secret in its user agent is not among the clients: %+v", a.Clients)
		}
		if a.BadLines != 0 {
			t.Errorf("the lab's own audit log has %d bad lines: %+v", a.BadLines, a.Bad)
		}
		for _, comp := range []string{"kube-controller-manager", "kube-scheduler"} {
			var perMin float64
			for _, l := range a.LeaderElection {
				if strings.HasPrefix(l.Client, comp+"/") && l.Name == comp {
					perMin = l.PerMinute
				}
			}
			// LAB.md: each renews every 2 s, 30 a minute.
			if perMin < 24 || perMin > 36 {
				t.Errorf("%s renews %.1f times a minute, want about 30: %+v", comp, perMin, a.LeaderElection)
			}
			f, ok := finding(r, "leader-election-"+comp)
			if !ok {
				t.Errorf("no leader-election finding for %s", comp)
				continue
			}
			if f.Confidence != "high" || !strings.Contains(f.Change, "--leader-elect=false") || f.Verify == "" {
				t.Errorf("%s finding: %+v", comp, f)
			}
		}
	})
	t.Run("poller", func(t *testing.T) {
		var found *explain.Poller
		for i, p := range r.Activity.Pollers {
			if strings.Contains(p.Cmdline, "kubectl") && strings.Contains(p.Cmdline, "apply") {
				found = &r.Activity.Pollers[i]
			}
		}
		if found == nil {
			t.Fatalf("the kubectl apply poller was not found: %+v", r.Activity.Pollers)
		}
		// 30 s at one run per 5 s: 6 runs (5 or 7 at the edges).
		if found.PeriodSeconds < 4.5 || found.PeriodSeconds > 5.5 || found.Runs < 5 || found.Runs > 7 || found.SharePct <= 0 {
			t.Errorf("poller = %+v, want every 5 s, 5-7 runs, a share", *found)
		}
		if !strings.Contains(found.ParentCmdline, "--token=***") {
			t.Errorf("poller's parent command line %q: want the planted token masked", found.ParentCmdline)
		}
		f, ok := finding(r, "poller")
		if !ok || !strings.Contains(f.Title, "every 5.") || f.Mc <= 0 {
			t.Errorf("poller finding = %+v", f)
		}
	})
	t.Run("coredns replicas", func(t *testing.T) {
		f, ok := finding(r, "coredns-replicas")
		if !ok || !strings.Contains(f.Change, "--replicas=1") || r.Facts == nil || r.Facts.Nodes != 1 {
			t.Errorf("two CoreDNS replicas on one node: finding %+v, facts %+v", f, r.Facts)
		}
	})
	t.Run("profiles", func(t *testing.T) {
		var got []string
		for _, p := range r.Profiles {
			got = append(got, p.Component)
			if p.Component != "kube-apiserver" {
				continue
			}
			if p.Samples == 0 || len(p.Top) == 0 || p.Seconds < 29 {
				t.Errorf("kube-apiserver profile: %+v", p)
			}
			if p.Flame != filepath.Join(flames, "kube-apiserver.svg") {
				t.Errorf("flame graph written to %q, want it in %s, next to the HTML report", p.Flame, flames)
			}
			b, err := os.ReadFile(p.Flame)
			if err != nil || xml.Unmarshal(b, new(struct{})) != nil || !strings.Contains(string(b), p.Top[0].Name[:min(20, len(p.Top[0].Name))]) {
				t.Errorf("flame graph %s: %v", p.Flame, err)
			}
		}
		if len(got) != 2 {
			t.Errorf("profiles of %v, want kube-apiserver and etcd (notes: %v)", got, r.Notes)
		}
	})
	t.Run("use view", func(t *testing.T) {
		var names []string
		for _, u := range r.USE.Rows {
			names = append(names, u.Resource)
		}
		if len(names) < 3 || names[0] != "cpu" || names[1] != "memory" || !strings.HasPrefix(names[2], "disk ") {
			t.Errorf("USE rows %v, want cpu, memory, disks", names)
		}
		etcdWrites := false
		for _, w := range r.USE.Writers {
			etcdWrites = etcdWrites || (w.Group == "etcd" && w.WriteBps > 0)
		}
		if !etcdWrites {
			t.Errorf("etcd does not write, says the USE view: %+v", r.USE.Writers)
		}
	})
	t.Run("html report", func(t *testing.T) {
		p := htmlCheck(t, page, "busy", "flame", "bars")
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		assertNoSecrets(t, "explain --html", string(b))
		heads := strings.Join(p.Headings, "|")
		for _, h := range []string{"Findings", "API clients", "CPU profile: kube-apiserver", "USE view"} {
			if !strings.Contains(heads, h) {
				t.Errorf("no %q section: %s", h, heads)
			}
		}
		for _, c := range p.Charts {
			if c.Kind == "flame" && !strings.Contains(c.Text, "runtime") {
				t.Errorf("flame graph %s names no runtime function: %.300q", c.ID, c.Text)
			}
		}
	})
	t.Run("recording explained with the cluster as it is now", func(t *testing.T) { explainRecordingNow(t, dir) })
	// The same cluster, as any cluster: an experiment through the commands target, scaling CoreDNS.
	t.Run("experiment through commands", func(t *testing.T) { experimentCommands(t, kc) })
}

// explainRecordingNow: a recording explained while the lab runs reads the cluster's facts now, and every
// output says so: the JSON, the table and the HTML report.
func explainRecordingNow(t *testing.T, dir string) {
	db := filepath.Join(t.TempDir(), "node.db")
	if _, errOut, err := run(context.Background(), "measure", "--duration", "2s", "--interval", "500ms", "--record", db); err != nil {
		t.Fatalf("measure: %v\n%s", err, errOut)
	}
	before := time.Now()
	page := filepath.Join(t.TempDir(), "recording.html")
	r, _ := explainJSON(t, db, "--lab-dir", dir, "--html", page)
	c := r.ClusterRead
	if r.Facts == nil || c == nil || c.When != explain.ReadNow || c.At.Before(before) || !strings.Contains(c.Note, "not when it was made") {
		t.Fatalf("facts of a recording: %+v, read %+v; want them labelled as read now", r.Facts, c)
	}
	table, errOut, err := run(context.Background(), "explain", db, "--lab-dir", dir)
	if err != nil || !strings.Contains(table, "note: "+c.Note[:60]) {
		t.Errorf("the table does not say the cluster was read now: %v\n%s\n%s", err, table, errOut)
	}
	b, err := os.ReadFile(page)
	if err != nil || !strings.Contains(string(b), "not when it was made") {
		t.Errorf("the HTML report does not say the cluster was read now: %v", err)
	}
	if _, err := os.Stat(strings.TrimSuffix(page, ".html") + "-flames"); !os.IsNotExist(err) {
		t.Errorf("explain of a recording made a flame graph directory (%v)", err)
	}
}

func finding(r explain.Report, id string) (explain.Finding, bool) {
	for _, f := range r.Findings {
		if f.ID == id {
			return f, true
		}
	}
	return explain.Finding{}, false
}

// TestExplainWithoutCluster: no kubeconfig and no lab, an unreachable pprof endpoint and a missing audit
// log each say what is wrong, and the node is still explained.
func TestExplainWithoutCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("measures for 2 s")
	}
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "none"))
	t.Setenv("HOME", t.TempDir())
	cwd := t.TempDir()
	t.Chdir(cwd) // flame graphs once went to ./tare-flames unasked
	me := testload.SelfPprof(t)
	r, _ := explainJSON(t, "--lab-dir", t.TempDir(), "--duration", "2s", "--interval", "200ms",
		"--audit", "/nonexistent/audit.log", "--pprof-url", "ghost=http://127.0.0.1:1", "--pprof-url", "me="+me)
	if len(r.Profiles) != 1 || r.Profiles[0].Component != "me" || r.Profiles[0].Flame != "" {
		t.Errorf("profiles %+v: want one of the test itself, with no flame graph file", r.Profiles)
	}
	if left, _ := os.ReadDir(cwd); len(left) > 0 {
		t.Errorf("explain without --flames or --html wrote %v in the working directory", left)
	}
	notes := strings.Join(r.Notes, "\n")
	if !strings.Contains(notes, "ghost pprof at http://127.0.0.1:1/debug/pprof/profile") || !strings.Contains(notes, "connection refused") {
		t.Errorf("unreachable pprof endpoint not named with its reason:\n%s", notes)
	}
	if !strings.Contains(r.API.Missing, "/nonexistent/audit.log") || !strings.Contains(r.API.Missing, "--audit-log-path") {
		t.Errorf("missing audit log: %q", r.API.Missing)
	}
	if !strings.Contains(notes, "no kubeconfig") {
		t.Errorf("no word on the missing kubeconfig:\n%s", notes)
	}
	if r.Window.Intervals < 8 || len(r.USE.Rows) < 2 || len(r.Activity.Series) != r.Window.Intervals {
		t.Errorf("window %+v, USE %d rows, series %d", r.Window, len(r.USE.Rows), len(r.Activity.Series))
	}
}

// TestExplainFlamesNextToHTML: with --html and no --flames, the flame graphs go next to the report;
// --flames DIR puts them in DIR.
func TestExplainFlamesNextToHTML(t *testing.T) {
	if testing.Short() {
		t.Skip("measures for 2 s, twice")
	}
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "none"))
	t.Setenv("HOME", t.TempDir())
	me := testload.SelfPprof(t)
	page := filepath.Join(t.TempDir(), "node.html")
	svg := filepath.Join(t.TempDir(), "svg")
	for _, d := range []struct{ flag, want string }{{"", filepath.Join(filepath.Dir(page), "node-flames")}, {svg, svg}} {
		args := []string{"--lab-dir", t.TempDir(), "--duration", "2s", "--interval", "500ms", "--audit", "none", "--pprof-url", "me=" + me, "--html", page}
		if d.flag != "" {
			args = append(args, "--flames", d.flag)
		}
		r, _ := explainJSON(t, args...)
		want := filepath.Join(d.want, "me.svg")
		if len(r.Profiles) != 1 || r.Profiles[0].Flame != want {
			t.Errorf("--flames %q: profiles %+v, want the flame graph at %s", d.flag, r.Profiles, want)
			continue
		}
		if b, err := os.ReadFile(want); err != nil || xml.Unmarshal(b, new(struct{})) != nil {
			t.Errorf("flame graph %s: %v", want, err)
		}
	}
}

// TestExplainRecording: a recording is explained like a live window, and its busy matches report's.
func TestExplainRecording(t *testing.T) {
	if testing.Short() {
		t.Skip("measures for 2 s")
	}
	db := filepath.Join(t.TempDir(), "node.db")
	if _, errOut, err := run(context.Background(), "measure", "--duration", "2s", "--interval", "200ms", "--record", db); err != nil {
		t.Fatalf("measure: %v\n%s", err, errOut)
	}
	r, _ := explainJSON(t, db, "--lab-dir", t.TempDir(), "--audit", "none")
	s := summaryJSON(t, "report", db)
	if r.NodeBusy != s.Reconcile.NodeBusy && fmt.Sprintf("%.1f", r.NodeBusy) != fmt.Sprintf("%.1f", s.Reconcile.NodeBusy) {
		t.Errorf("explain says %.1fm busy, report %.1fm", r.NodeBusy, s.Reconcile.NodeBusy)
	}
	if len(r.USE.Rows) < 3 {
		t.Errorf("USE from a recording: %+v", r.USE)
	}
}

func kubectlApply(t *testing.T, kubeconfig, manifest string) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "m.yaml")
	if err := os.WriteFile(p, []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	kubectl(t, kubeconfig, "apply", "-f", p)
}
