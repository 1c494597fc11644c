package kube_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tare-dev/tare/internal/kube"
)

// kubeconfig is a kubeconfig with one cluster, user and context, all called name; current is its
// current-context ("" for none).
func kubeconfig(name, server, token, current string) string {
	s := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: %[1]s, cluster: {server: %[2]q}}]
users: [{name: %[1]s, user: {token: %[3]s}}]
contexts: [{name: %[1]s, context: {cluster: %[1]s, user: %[1]s}}]
`, name, server, token)
	if current != "" {
		s += "current-context: " + current + "\n"
	}
	return s
}

func write(t *testing.T, path, content string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// noKubeconfig points $KUBECONFIG and $HOME at nothing, so that only what a test writes is found.
func noKubeconfig(t *testing.T) (home string) {
	home = t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("KUBECONFIG", "")
	return home
}

// TestNewClientExplicit: --kubeconfig is the one file read, even with $KUBECONFIG set, and the options land
// in the REST configuration.
func TestNewClientExplicit(t *testing.T) {
	dir := noKubeconfig(t)
	path := write(t, filepath.Join(dir, "lab.kubeconfig"), kubeconfig("lab", "https://127.0.0.1:6443", "t0k", "lab"))
	t.Setenv("KUBECONFIG", write(t, filepath.Join(dir, "other"), kubeconfig("other", "https://192.0.2.1:6443", "x", "other")))
	c, err := kube.NewClient(path, kube.Options{UserAgent: "tare-test", Timeout: 3 * time.Second, QPS: 100, Burst: 200})
	if err != nil {
		t.Fatal(err)
	}
	cfg := c.Config
	if c.Source != path || cfg.Host != "https://127.0.0.1:6443" || cfg.BearerToken != "t0k" {
		t.Errorf("source %s, host %s, token %q: want %s, the lab's server and token", c.Source, cfg.Host, cfg.BearerToken, path)
	}
	if cfg.UserAgent != "tare-test" || cfg.Timeout != 3*time.Second || cfg.QPS != 100 || cfg.Burst != 200 {
		t.Errorf("options not applied: agent %q, timeout %v, qps %v, burst %d", cfg.UserAgent, cfg.Timeout, cfg.QPS, cfg.Burst)
	}
	d, err := kube.NewClient(path, kube.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Config.UserAgent != "tare" || d.Config.Timeout != 0 || d.Config.QPS != 0 || d.Config.Burst != 0 {
		t.Errorf("zero options: agent %q, timeout %v, qps %v, burst %d; want tare and client-go's defaults",
			d.Config.UserAgent, d.Config.Timeout, d.Config.QPS, d.Config.Burst)
	}
	if _, err := c.Clientset(); err != nil {
		t.Errorf("clientset: %v", err)
	}
	if _, err := c.HTTPClient(); err != nil {
		t.Errorf("HTTP client: %v", err)
	}
}

// TestNewClientKUBECONFIG: the files of $KUBECONFIG are merged as kubectl merges them: missing ones are
// skipped, the first file to set current-context wins, and a context may come from another file than it.
func TestNewClientKUBECONFIG(t *testing.T) {
	dir := noKubeconfig(t)
	first := write(t, filepath.Join(dir, "first"), "apiVersion: v1\nkind: Config\ncurrent-context: prod\n")
	second := write(t, filepath.Join(dir, "second"), kubeconfig("prod", "https://192.0.2.10:6443", "p", "staging"))
	missing := filepath.Join(dir, "missing")
	t.Setenv("KUBECONFIG", strings.Join([]string{first, missing, second}, string(filepath.ListSeparator)))
	c, err := kube.NewClient("", kube.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if want := first + ":" + second; c.Source != want {
		t.Errorf("source %q, want %q", c.Source, want)
	}
	if c.Config.Host != "https://192.0.2.10:6443" || c.Config.BearerToken != "p" {
		t.Errorf("host %s, token %q: want prod's, from the second file", c.Config.Host, c.Config.BearerToken)
	}
}

// TestNewClientHome: with no flag and no $KUBECONFIG, ~/.kube/config of $HOME as it is now.
func TestNewClientHome(t *testing.T) {
	home := noKubeconfig(t)
	path := write(t, filepath.Join(home, ".kube", "config"), kubeconfig("home", "https://127.0.0.1:16443", "h", "home"))
	c, err := kube.NewClient("", kube.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Source != path || c.Config.Host != "https://127.0.0.1:16443" {
		t.Errorf("source %s, host %s; want %s and its server", c.Source, c.Config.Host, path)
	}
}

// TestNewClientNone: nothing given, nothing found is ErrNoKubeconfig, also when $KUBECONFIG lists only
// missing files.
func TestNewClientNone(t *testing.T) {
	dir := noKubeconfig(t)
	for _, env := range []string{"", filepath.Join(dir, "a") + ":" + filepath.Join(dir, "b")} {
		t.Setenv("KUBECONFIG", env)
		if _, err := kube.NewClient("", kube.Options{}); !errors.Is(err, kube.ErrNoKubeconfig) {
			t.Errorf("KUBECONFIG=%q: %v, want ErrNoKubeconfig", env, err)
		}
	}
}

// TestNewClientUnusable: a file that is not a usable kubeconfig fails with an error naming it and what is
// wrong, whether given with --kubeconfig or found through $KUBECONFIG.
func TestNewClientUnusable(t *testing.T) {
	dir := noKubeconfig(t)
	valid := kubeconfig("lab", "https://127.0.0.1:6443", "t", "lab")
	for _, tc := range []struct{ name, content, want string }{
		{"notes", "just some notes\n", "is not a kubeconfig"},
		{"no clusters", "apiVersion: v1\nkind: Config\n", "names no cluster"},
		{"no current-context", kubeconfig("lab", "https://127.0.0.1:6443", "t", ""), "has no current-context: set one with kubectl config use-context NAME"},
		{"unknown context", strings.Replace(valid, "current-context: lab", "current-context: prod", 1), "context was not found for specified context: prod"},
	} {
		path := write(t, filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")), tc.content)
		_, err := kube.NewClient(path, kube.Options{})
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s with --kubeconfig: %v; want an error naming %s and saying %q", tc.name, err, path, tc.want)
		}
		t.Setenv("KUBECONFIG", path)
		_, err = kube.NewClient("", kube.Options{})
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s in $KUBECONFIG: %v; want an error naming %s and saying %q", tc.name, err, path, tc.want)
		}
		t.Setenv("KUBECONFIG", "")
	}
	if _, err := kube.NewClient(filepath.Join(dir, "nope"), kube.Options{}); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("missing --kubeconfig: %v", err)
	}
}

// TestNewClientTalksTLS: a client from a kubeconfig found through $KUBECONFIG reaches a real HTTPS server
// with the kubeconfig's CA and token: the pod namer lists pods through it and Connect's client reads
// /metrics.
func TestNewClientTalksTLS(t *testing.T) {
	dir := noKubeconfig(t)
	var mu sync.Mutex
	var auth []string
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auth = append(auth, r.Header.Get("Authorization")+" "+r.UserAgent())
		mu.Unlock()
		if r.URL.Query().Get("watch") != "" { // the namer's watch: nothing happens until the test ends
			<-r.Context().Done()
			return
		}
		if r.URL.Path == "/metrics" {
			fmt.Fprintln(w, "apiserver_request_total 1")
			return
		}
		_ = json.NewEncoder(w).Encode(corev1.PodList{Items: []corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "u1"}}}})
	}))
	t.Cleanup(srv.Close)
	ca := base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}))
	cfg := strings.Replace(kubeconfig("tls", srv.URL, "s3cret", "tls"), "{server:", "{certificate-authority-data: "+ca+", server:", 1)
	t.Setenv("KUBECONFIG", write(t, filepath.Join(dir, "tls"), cfg))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n, err := kube.NewPodNamer(ctx, "", "", "")
	if err != nil {
		t.Fatal(err)
	}
	if ref, ok := n.Name("u1", ""); !ok || ref.Name != "web" {
		t.Errorf("Name(u1) = %+v, %v", ref, ok)
	}
	kc, err := kube.NewClient("", kube.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kc.Cluster()
	if err != nil {
		t.Fatal(err)
	}
	body, err := cl.Metrics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	body.Close()
	cancel() // ends the namer's watch
	mu.Lock()
	defer mu.Unlock()
	// The list, the metrics and perhaps the watch: each with the token and tare's user agent.
	if len(auth) < 2 {
		t.Errorf("requests %q: want the pod list and /metrics at least", auth)
	}
	for _, a := range auth {
		if !strings.HasPrefix(a, "Bearer s3cret tare") {
			t.Errorf("requests carried %q; want the kubeconfig's token and tare's user agent", auth)
			break
		}
	}
}
