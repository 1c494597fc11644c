package promtest

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tare-dev/tare/internal/lab"
	"github.com/tare-dev/tare/internal/lab/labtest"
	"github.com/tare-dev/tare/internal/testenv"
)

// Server is a Prometheus process a test started.
type Server struct {
	URL string // http://127.0.0.1:PORT
	Dir string // holds the configuration, its files and the TSDB; removed after the test
}

// Start runs prometheus on a free loopback port with config written to prometheus.yml in a temporary
// directory, beside files (rule files the configuration names, by base name), and waits until it is ready.
// The test stops it and removes the directory at cleanup. Without a prometheus binary the test is
// unavailable.
func Start(t testing.TB, config []byte, files map[string][]byte) *Server {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		testenv.Unavailable(t, "prometheus not found (apt-get install prometheus): %v", err)
	}
	return StartBinary(t, bin, config, files)
}

// StartBinary is Start with a given prometheus binary (Upstream's, for Kubernetes service discovery).
func StartBinary(t testing.TB, bin string, config []byte, files map[string][]byte) *Server {
	t.Helper()
	dir := t.TempDir()
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfg, config, 0o644); err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	var logs syncBuffer
	cmd := exec.Command(bin, "--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address=127.0.0.1:"+strconv.Itoa(port), "--log.level=warn")
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting prometheus: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			_ = err // stopped by our signal: its exit status says nothing
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			err := <-exited
			t.Logf("prometheus did not stop within 10 s of SIGTERM; killed: %v", err)
		}
		if t.Failed() {
			t.Logf("prometheus log:\n%s", logs.String())
		}
	})
	s := &Server{URL: "http://127.0.0.1:" + strconv.Itoa(port), Dir: dir}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		if ready(ctx, s.URL) {
			return s
		}
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("prometheus exited before it was ready: %v\n%s", err, logs.String())
		case <-ctx.Done():
			t.Fatalf("prometheus not ready within 30 s\n%s", logs.String())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func ready(ctx context.Context, base string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/-/ready", nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// freePort returns a loopback port nothing listens on now.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	addr, ok := l.Addr().(*net.TCPAddr)
	if !ok {
		t.Fatalf("listener address %v is not TCP", l.Addr())
	}
	return addr.Port
}

// syncBuffer is a bytes.Buffer the process's output goroutines and the test share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// BadTargets returns three URLs that are not a usable Prometheus: a loopback port nothing listens on, a
// plain HTTP server that answers 404 to everything, and a real Prometheus that scrapes nothing.
func BadTargets(t testing.TB) (closed, notPrometheus, empty string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed = "http://" + l.Addr().String()
	_ = l.Close()
	notProm := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(notProm.Close)
	return closed, notProm.URL, Start(t, []byte("global:\n  scrape_interval: 1s\n"), nil).URL
}

// Upstream returns the path of upstream prometheus or promtool (program), built into tare's cache the first
// time (lab.InstallPrometheus, a few minutes). Debian's build lacks Kubernetes service discovery, which
// tests of the shipped scrape configuration need. Without go or the module proxy the test is unavailable.
// Tests that ask at once wait for one build.
func Upstream(t testing.TB, program string) string {
	t.Helper()
	labtest.BuildOnce(t, "upstream Prometheus "+lab.PrometheusVersion, func() string { return lab.PrometheusBin(program) }, lab.InstallPrometheus)
	p := lab.PrometheusBin(program)
	if p == "" {
		t.Fatalf("upstream %s missing from the cache after building it", program)
	}
	return p
}
