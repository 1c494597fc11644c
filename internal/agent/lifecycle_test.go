package agent

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/tare-dev/tare/internal/sample"
)

// TestAgentHealthz serves a state that has no sample yet (503, with the reason), then takes one real
// sample into it (200).
func TestAgentHealthz(t *testing.T) {
	o := Options{Interval: 200 * time.Millisecond, Window: 2 * time.Second, TopProcesses: 5}
	st := newState(o.ringLen(), o.Window)
	h, _, err := newHandler(st, o)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	get := func(path string) (int, string) {
		resp, err := srv.Client().Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, path := range []string{"/healthz", "/summary"} {
		if code, body := get(path); code != http.StatusServiceUnavailable || !strings.Contains(body, "no sample yet") {
			t.Errorf("GET %s before the first sample: %d %q, want 503 saying there is no sample yet", path, code, body)
		}
	}
	smp, err := sample.New(context.Background(), sample.Options{Interval: o.Interval, Detail: o.Interval}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer smp.Close()
	x, err := smp.Sample()
	if err != nil {
		t.Fatal(err)
	}
	st.add(x, smp.Meta())
	if code, body := get("/healthz"); code != http.StatusOK {
		t.Errorf("GET /healthz after the first sample: %d %q, want 200", code, body)
	}
	for _, q := range []string{"window=abc", "window=1h", "window=1ms", "window=-5s"} {
		if code, body := get("/summary?" + q); code != http.StatusBadRequest {
			t.Errorf("GET /summary?%s: %d %q, want 400", q, code, body)
		}
	}
}

// TestAgentBadListen: an address in use fails at once, naming it, before any sample is taken.
func TestAgentBadListen(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	sampled := false
	err = Run(context.Background(), Options{Listen: busy.Addr().String(), Interval: time.Second, Window: time.Minute,
		OnSample: func(sample.Sample) { sampled = true }})
	if err == nil || !strings.Contains(err.Error(), "listening on "+busy.Addr().String()) || !strings.Contains(err.Error(), "--listen") {
		t.Errorf("Run on an address in use: %v, want an error naming the address and --listen", err)
	}
	if sampled {
		t.Error("the agent sampled although it could not listen")
	}
}

// TestAgentBadProcRoot: a proc root that does not exist is named.
func TestAgentBadProcRoot(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	err = Run(context.Background(), Options{Listener: ln, Interval: time.Second, Window: time.Minute,
		Sampler: sample.Options{ProcRoot: "/nonexistent-proc"}})
	if err == nil || !strings.Contains(err.Error(), "/nonexistent-proc") || !strings.Contains(err.Error(), "--proc-root") {
		t.Errorf("Run with a missing proc root: %v, want an error naming it and --proc-root", err)
	}
}

// TestAgentMissingSource serves a host whose kernel configuration cannot be found (a proc root without
// config.gz, an empty host root): the agent keeps serving, with the limitation in /summary's meta and
// counted in tare_warnings_total.
func TestAgentMissingSource(t *testing.T) {
	proc := t.TempDir()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() == "config.gz" {
			continue
		}
		if err := os.Symlink(filepath.Join("/proc", e.Name()), filepath.Join(proc, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	r := startAgent(t, Options{Interval: 100 * time.Millisecond, Window: 2 * time.Second,
		Sampler: sample.Options{ProcRoot: proc, HostRoot: t.TempDir()}})
	r.nextSample(t)
	_, body := r.get(t, "/summary")
	if !strings.Contains(body, "kernel configuration") {
		t.Errorf("/summary's meta does not say the kernel configuration is missing:\n%.2000s", body)
	}
	if n, _ := r.scrape(t).sum("tare_warnings_total", `kind="limitation"`); n < 1 {
		t.Errorf("tare_warnings_total{kind=\"limitation\"} is %v, want 1 or more", n)
	}
}

// TestAgentShutdown cancels a serving agent: Run returns nil and leaves no goroutine behind.
func TestAgentShutdown(t *testing.T) {
	before := runtime.NumGoroutine()
	r := startAgent(t, Options{Interval: 100 * time.Millisecond, Window: 2 * time.Second})
	r.nextSample(t)
	r.scrape(t)
	r.get(t, "/summary?window=1s")
	if err := r.stop(); err != nil {
		t.Fatalf("Run after cancel: %v, want nil", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines after the agent stopped, %d before:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(20 * time.Millisecond)
	}
}
