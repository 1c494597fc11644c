package collect

import (
	"context"
	"encoding/xml"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/tare-dev/tare/internal/pprof"
	"github.com/tare-dev/tare/internal/sample"
	"github.com/tare-dev/tare/internal/testload"
)

// hangingPprof is a pprof endpoint that never answers: it holds each request until the client goes away.
func hangingPprof(t *testing.T) string {
	t.Helper()
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	t.Cleanup(func() { close(stop); srv.Close() })
	return srv.URL
}

// waitMeasure is a window of d that ends early when ctx is cancelled.
func waitMeasure(d time.Duration, err error) Measure {
	return func(ctx context.Context) ([]sample.Sample, sample.Meta, error) {
		select {
		case <-ctx.Done():
		case <-time.After(d):
		}
		return nil, sample.Meta{}, err
	}
}

// TestCollectWindowFailsEarly: when the measurement fails while a profile is still being taken (here from
// an endpoint that never answers, for a minute-long window), Collect returns the measurement's error at
// once and leaves no goroutine behind.
func TestCollectWindowFailsEarly(t *testing.T) {
	// Not parallel: it counts the process's goroutines.
	base := hangingPprof(t)
	before := runtime.NumGoroutine()
	s := &Sources{Targets: []pprof.Target{{Component: "slow", Base: base}, {Component: "slow2", Base: base}}, opts: Options{Duration: time.Minute}}
	boom := errors.New("the first sample could not be taken")
	start := time.Now()
	_, err := s.Collect(context.Background(), waitMeasure(100*time.Millisecond, boom))
	took := time.Since(start)
	if !errors.Is(err, boom) {
		t.Fatalf("Collect: %v, want the measurement's error", err)
	}
	if took > 5*time.Second {
		t.Errorf("Collect took %s to return the measurement's error: the profiles were not cancelled", took)
	}
	// The client's and the server's connection goroutines end once the cancelled requests are torn down.
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<20)
		t.Errorf("%d goroutines after Collect returned, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
	}
}

// TestCollectProfileFailsEarly: a profile that fails (a refused connection) is a note; the window it was
// to cover is still measured to its end.
func TestCollectProfileFailsEarly(t *testing.T) {
	refused := httptest.NewServer(http.NotFoundHandler())
	base := refused.URL
	refused.Close() // nothing listens there any more
	s := &Sources{Targets: []pprof.Target{{Component: "gone", Base: base}}, opts: Options{Duration: time.Second}}
	start := time.Now()
	res, err := s.Collect(context.Background(), waitMeasure(500*time.Millisecond, nil))
	if err != nil {
		t.Fatalf("Collect: %v", err)
	}
	if took := time.Since(start); took < 500*time.Millisecond {
		t.Errorf("the window ended after %s: the failed profile cut it short", took)
	}
	if len(res.Notes) != 1 || !strings.Contains(res.Notes[0], "gone pprof at "+base) || !strings.Contains(res.Notes[0], "connection refused") {
		t.Errorf("notes %q: want the refused profile named with its reason", res.Notes)
	}
	if len(res.Profiles) != 0 {
		t.Errorf("profiles %+v from a refused endpoint", res.Profiles)
	}
}

// TestCollectFlames: a real profile (this process's) over the window is summarised; its flame graph is
// written only when a directory is given.
func TestCollectFlames(t *testing.T) {
	base := testload.SelfPprof(t)
	dir := filepath.Join(t.TempDir(), "flames")
	for _, flameDir := range []string{"", dir} {
		s := &Sources{Targets: []pprof.Target{{Component: "self", Base: base}}, opts: Options{Duration: time.Second, FlameDir: flameDir}}
		res, err := s.Collect(context.Background(), waitMeasure(time.Second, nil))
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Profiles) != 1 || res.Profiles[0].Component != "self" || res.Profiles[0].Seconds < 0.9 { // the profile reports its own duration, a hair under the 1 s asked
			t.Fatalf("FlameDir %q: profiles %+v, notes %q", flameDir, res.Profiles, res.Notes)
		}
		got := res.Profiles[0].Flame
		if flameDir == "" {
			if _, err := os.Stat(dir); got != "" || !errors.Is(err, os.ErrNotExist) {
				t.Errorf("no FlameDir: flame graph %q, directory %v", got, err)
			}
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, "self.svg"))
		if got != filepath.Join(dir, "self.svg") || err != nil || xml.Unmarshal(b, new(struct{})) != nil {
			t.Errorf("FlameDir %s: flame graph %q: %v", dir, got, err)
		}
	}
}

// TestDiscoverRecording: a recording is explained without profiles, and asking for some says so.
func TestDiscoverRecording(t *testing.T) {
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "none"))
	t.Setenv("HOME", t.TempDir())
	s := Discover(Options{LabDir: t.TempDir(), Recording: "node.db", Pprof: []string{"etcd"}, PprofURL: []string{"me=http://127.0.0.1:1"}})
	notes := strings.Join(s.Notes, "\n")
	if len(s.Targets) != 0 || s.Cluster != nil || !strings.Contains(notes, "profiles are taken live: none for a recording") || !strings.Contains(notes, "no kubeconfig") {
		t.Errorf("sources of a recording: targets %v, cluster %v, notes:\n%s", s.Targets, s.Cluster, notes)
	}
	s = Discover(Options{LabDir: t.TempDir(), Pprof: []string{"etcd"}, PprofURL: []string{"me=http://127.0.0.1:1/debug/pprof/"}})
	if len(s.Targets) != 1 || s.Targets[0].Base != "http://127.0.0.1:1" || !strings.Contains(strings.Join(s.Notes, "\n"), `no endpoint known for "etcd"`) {
		t.Errorf("live sources: targets %+v, notes %q", s.Targets, s.Notes)
	}
}

func TestParsePprofURL(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"etcd=http://127.0.0.1:2379":           "http://127.0.0.1:2379",
		"x=https://h:1/debug/pprof/":           "https://h:1",
		"a=b=http://h:2/":                      "",
		"etcd":                                 "",
		"=http://h:1":                          "",
		"etcd=127.0.0.1:2379":                  "",
		"kubelet=https://n:10250/debug/pprof":  "https://n:10250",
		"proxy=http://h/api/v1/nodes/n/proxy/": "http://h/api/v1/nodes/n/proxy",
		"etcd=ftp://h:1":                       "",
		"":                                     "",
	} {
		got, err := ParsePprofURL(in)
		if (err == nil) != (want != "") || got.Base != want {
			t.Errorf("ParsePprofURL(%q) = %+v, %v; want base %q", in, got, err, want)
		}
	}
}

// TestDiscoverContext: --context picks that context of the kubeconfig found as kubectl finds it, and a
// context other than the lab's leaves a running lab out (as naming another kubeconfig does); the lab's
// own context, or none, still finds the lab. Nothing contacts a server.
func TestDiscoverContext(t *testing.T) {
	dir := t.TempDir()
	kc := filepath.Join(dir, "config")
	writeFile(t, kc, `apiVersion: v1
kind: Config
clusters:
- {name: a, cluster: {server: "https://127.0.0.1:1"}}
- {name: b, cluster: {server: "https://127.0.0.1:2"}}
users:
- {name: u, user: {token: x}}
contexts:
- {name: a, context: {cluster: a, user: u}}
- {name: b, context: {cluster: b, user: u}}
current-context: a
`)
	t.Setenv("KUBECONFIG", kc)
	t.Setenv("HOME", t.TempDir())
	labDir := filepath.Join(dir, "lab")
	labKC := filepath.Join(labDir, "kubeconfig")
	writeFile(t, labKC, `apiVersion: v1
kind: Config
clusters:
- {name: lab, cluster: {server: "https://127.0.0.1:3"}}
users:
- {name: u, user: {token: x}}
contexts:
- {name: lab, context: {cluster: lab, user: u}}
current-context: lab
`)
	writeFile(t, filepath.Join(labDir, "state.json"), `{"version": 1, "ready": true, "kubeconfig": "`+labKC+`"}`)
	for _, tc := range []struct {
		context, host string
		lab           bool
	}{
		{"", "https://127.0.0.1:3", true},
		{"b", "https://127.0.0.1:2", false},
		{"a", "https://127.0.0.1:1", false},
	} {
		s := Discover(Options{LabDir: labDir, Context: tc.context, Recording: "node.db"})
		if s.Cluster == nil || s.Cluster.Host != tc.host || (s.Lab != nil) != tc.lab {
			t.Errorf("--context %q: cluster %+v, lab %v (notes %q); want %s, lab %v", tc.context, s.Cluster, s.Lab != nil, s.Notes, tc.host, tc.lab)
			continue
		}
		if _, kctx := s.Kubeconfig(); !tc.lab && kctx != tc.context {
			t.Errorf("--context %q: the session would name pods through context %q", tc.context, kctx)
		}
	}
	if s := Discover(Options{LabDir: labDir, Context: "nosuch", Recording: "node.db"}); s.Cluster != nil || !strings.Contains(strings.Join(s.Notes, "\n"), "nosuch") {
		t.Errorf("a context the kubeconfig lacks: cluster %+v, notes %q", s.Cluster, s.Notes)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
