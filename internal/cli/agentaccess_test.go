package cli

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netns"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/tare-dev/tare/internal/cluster"
	"github.com/tare-dev/tare/internal/deploy"
	"github.com/tare-dev/tare/internal/kube"
	"github.com/tare-dev/tare/internal/testenv"
)

// The identities the access checks use: ServiceAccounts in default, each bound (or not) to one role.
const (
	nobodyAccount  = "tare-test-nobody"  // no role at all
	scraperAccount = "tare-test-scraper" // deploy.MetricsReaderRole
	readerAccount  = "tare-test-reader"  // deploy.ClusterReaderRole
	viewerAccount  = "tare-test-viewer"  // lists nodes and pods, but may not get /summary
)

// accountToken creates the ServiceAccount name in default (if missing), binds it to the ClusterRole role
// when role is not empty, and returns a ten-minute token of it from the TokenRequest API.
func accountToken(ctx context.Context, t *testing.T, cs kubernetes.Interface, name, role string) string {
	t.Helper()
	t.Cleanup(func() {
		_ = cs.CoreV1().ServiceAccounts("default").Delete(context.Background(), name, metav1.DeleteOptions{})
		if role != "" {
			_ = cs.RbacV1().ClusterRoleBindings().Delete(context.Background(), name, metav1.DeleteOptions{})
		}
	})
	tok, err := readerToken(ctx, cs, name, role)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// tokenKubeconfig writes a copy of the kubeconfig kc whose user is the bearer token, as a user handed a
// token would have.
func tokenKubeconfig(t *testing.T, kc, token string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(kc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := cfg.Contexts[cfg.CurrentContext]
	ai := cfg.AuthInfos[ctx.AuthInfo]
	ai.ClientCertificate, ai.ClientCertificateData, ai.ClientKey, ai.ClientKeyData = "", nil, "", nil
	ai.Token = token
	p := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, p); err != nil {
		t.Fatal(err)
	}
	return p
}

// podNetnsClient is an HTTP client whose connections start in the network namespace of the pod whose
// cgroup is cg: a caller inside the cluster's pod network, as an attacker's pod would be. It does not
// verify the agent's certificate (the agent's is self-made) and presents no client certificate.
func podNetnsClient(t *testing.T, cg string) *http.Client {
	t.Helper()
	// The pod's processes are in its containers' cgroups, below the pod's.
	pid := 0
	_ = filepath.WalkDir(cg, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "cgroup.procs" {
			return nil
		}
		b, _ := os.ReadFile(p)
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				pid = n
				return filepath.SkipAll
			}
		}
		return nil
	})
	if pid == 0 {
		t.Fatalf("no process in %s or below", cg)
	}
	ns, err := netns.GetFromPath(fmt.Sprintf("/proc/%d/ns/net", pid))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ns.Close() })
	// Through the handle held here, so that the namespace outlives the pod's process.
	dial := testenv.DialFrom(fmt.Sprintf("/proc/self/fd/%d", int(ns)))
	tr := &http.Transport{DialContext: dial, TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, DisableKeepAlives: true} //nolint:gosec // the agent's certificate is self-made
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

// checkAgentAccess plays the callers of an agent, from a pod on the agent's node (cg is the pod's cgroup),
// to the agent's port at the node's address: without credentials, with a bad token, with a token of an
// account without rights, with Prometheus's role and with cluster measure's. It checks what each gets,
// that the refused get nothing else, and that /healthz is open.
func checkAgentAccess(ctx context.Context, t *testing.T, cs kubernetes.Interface, agent *corev1.Pod, cg string) {
	t.Helper()
	client := podNetnsClient(t, cg)
	base := "https://" + net.JoinHostPort(agent.Status.PodIP, strconv.Itoa(deploy.DefaultPort))
	tokens := map[string]string{
		"none":   "",
		"bad":    "not-a-token",
		"nobody": accountToken(ctx, t, cs, nobodyAccount, ""),
		"scrape": accountToken(ctx, t, cs, scraperAccount, deploy.MetricsReaderRole),
		"reader": accountToken(ctx, t, cs, readerAccount, deploy.ClusterReaderRole),
	}
	for _, tt := range []struct {
		who, path string
		want      int
	}{
		{"none", "/healthz", 200},
		{"none", "/metrics", 401},
		{"none", "/summary", 401},
		{"bad", "/metrics", 401},
		{"bad", "/summary", 401},
		{"nobody", "/metrics", 403},
		{"nobody", "/summary", 403},
		{"scrape", "/metrics", 200},
		{"scrape", "/summary", 403},
		{"reader", "/summary", 200},
		{"reader", "/metrics", 403},
	} {
		code, body := getFrom(ctx, t, client, base+tt.path, tokens[tt.who])
		if code != tt.want {
			t.Errorf("%s GET %s from a pod: %d, want %d\n%.300s", tt.who, tt.path, code, tt.want, body)
			continue
		}
		if code >= 400 && (strings.Contains(body, "tare_") || strings.Contains(body, "{")) {
			t.Errorf("%s GET %s: refused, but the body holds data: %.300s", tt.who, tt.path, body)
		}
		if tt.path == "/summary" && code == 200 {
			var s struct {
				Processes []struct {
					Cmdline string `json:"cmdline"`
					Comm    string `json:"comm"`
				} `json:"processes"`
			}
			if err := json.Unmarshal([]byte(body), &s); err != nil || len(s.Processes) == 0 {
				t.Errorf("/summary: %v (%d processes)", err, len(s.Processes))
			}
			for _, p := range s.Processes {
				if strings.Contains(p.Cmdline, " ") {
					t.Errorf("/summary serves a command line without --serve-cmdlines: %q", p.Cmdline)
					break
				}
			}
		}
	}
	// Plain HTTP on the agent's port gets no data either.
	plain := "http://" + net.JoinHostPort(agent.Status.PodIP, strconv.Itoa(deploy.DefaultPort)) + "/metrics"
	if code, body := getFrom(ctx, t, client, plain, ""); code == 200 {
		t.Errorf("plain HTTP GET /metrics: 200: %.200s", body)
	}
}

// getFrom GETs url with client, presenting token when not empty, and returns the status and body (status
// 0 and the error when there is no answer).
func getFrom(ctx context.Context, t *testing.T, client *http.Client, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	return resp.StatusCode, string(b)
}

// checkClusterMeasureRBAC runs tare cluster measure as users handed tokens: one bound to the shipped
// ClusterReaderRole reads every node; one that may list nodes and pods but not get /summary gets a row per
// node saying it is forbidden; one with no rights cannot list the nodes.
func checkClusterMeasureRBAC(ctx context.Context, t *testing.T, cs kubernetes.Interface, kc string) {
	t.Helper()
	viewer := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: viewerAccount},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes", "pods"}, Verbs: []string{"list"}}}}
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, viewer, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.RbacV1().ClusterRoles().Delete(context.Background(), viewerAccount, metav1.DeleteOptions{})
	})
	measure := func(account, role string) (cluster.View, string, error) {
		kc := tokenKubeconfig(t, kc, accountToken(ctx, t, cs, account, role))
		out, errOut, err := run(ctx, "cluster", "measure", "--kubeconfig", kc, "--duration", "5s", "--no-wait", "-o", "json")
		var v cluster.View
		if err == nil {
			if jerr := json.Unmarshal([]byte(out), &v); jerr != nil {
				t.Fatalf("cluster measure -o json: %v\n%s", jerr, out)
			}
		}
		return v, errOut, err
	}
	v, errOut, err := measure(readerAccount, deploy.ClusterReaderRole)
	if err != nil {
		t.Fatalf("cluster measure as %s (%s): %v\n%s", readerAccount, deploy.ClusterReaderRole, err, errOut)
	}
	for _, n := range v.Nodes {
		if n.Status != cluster.StatusOK {
			t.Errorf("cluster measure as %s: node %s: %s: %s", readerAccount, n.Name, n.Status, n.Reason)
		}
	}
	v, errOut, err = measure(viewerAccount, viewerAccount)
	if err != nil {
		t.Fatalf("cluster measure as %s: %v\n%s", viewerAccount, err, errOut)
	}
	for _, n := range v.Nodes {
		if n.Status != cluster.StatusForbidden || !strings.Contains(n.Reason, deploy.ClusterReaderRole) {
			t.Errorf("cluster measure as %s: node %s: %s: %s, want forbidden naming %s", viewerAccount, n.Name, n.Status, n.Reason, deploy.ClusterReaderRole)
		}
	}
	if _, errOut, err = measure(nobodyAccount, ""); err == nil || !strings.Contains(errOut, "forbidden") {
		t.Errorf("cluster measure with no rights: %v, stderr %q: want refused", err, errOut)
	}
}

// checkPodSecurity asks the API server's Pod Security admission (a server-side dry run) to admit the
// agent's pod: refused in a namespace enforcing baseline, for the host namespaces, paths, ports and
// capabilities; admitted at privileged, the level the manifest's namespace claims.
func checkPodSecurity(ctx context.Context, t *testing.T, cs kubernetes.Interface, node string) {
	t.Helper()
	objs, err := deploy.Objects(deploy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var spec corev1.PodSpec
	for _, o := range objs {
		if d, ok := o.(*appsv1.DaemonSet); ok {
			spec = d.Spec.Template.Spec
		}
	}
	if len(spec.Containers) == 0 {
		t.Fatal("no DaemonSet in the manifest")
	}
	spec.NodeName = node
	const baseline = "tare-test-baseline"
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: baseline, Labels: map[string]string{"pod-security.kubernetes.io/enforce": "baseline"}}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.CoreV1().Namespaces().Delete(context.Background(), baseline, metav1.DeleteOptions{}) })
	// The pod's ServiceAccount, so that admission reaches Pod Security.
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: spec.ServiceAccountName}}
	if _, err := cs.CoreV1().ServiceAccounts(baseline).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "agent-dry-run"}, Spec: spec}
	_, err = cs.CoreV1().Pods(baseline).Create(ctx, pod, dry)
	if err == nil || !apierrors.IsForbidden(err) {
		t.Errorf("the agent's pod in a baseline namespace: %v, want refused by Pod Security", err)
	} else {
		for _, want := range []string{"host namespaces", "hostPath volumes", "hostPort", "capabilities"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("baseline's refusal does not name %q: %v", want, err)
			}
		}
		t.Logf("baseline refuses the agent's pod: %v", err)
	}
	if _, err := cs.CoreV1().Pods(deploy.DefaultNamespace).Create(ctx, pod, dry); err != nil {
		t.Errorf("the agent's pod in its own (privileged) namespace: %v", err)
	}
}

// agentHTTPClient reads the agents as tare cluster measure does: with the kubeconfig's own credentials.
func agentHTTPClient(t *testing.T, kc string) *http.Client {
	t.Helper()
	c, err := kube.NewClient(kc, kube.Options{})
	if err != nil {
		t.Fatal(err)
	}
	hc, err := c.AgentHTTPClient("")
	if err != nil {
		t.Fatal(err)
	}
	hc.Timeout = 15 * time.Second
	return hc
}
