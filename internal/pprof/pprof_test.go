package pprof

import (
	"bytes"
	"context"
	"encoding/xml"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	nhpprof "net/http/pprof"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

var sink atomic.Uint64

// burnTareTestCPU spins until stop is closed: the function the profile must find on top.
func burnTareTestCPU(stop <-chan struct{}) {
	x := uint64(1)
	for {
		select {
		case <-stop:
			return
		default:
		}
		for i := 0; i < 100000; i++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
		sink.Store(x)
	}
}

// A real profile from Go's runtime profiler, served the way components serve it.
func TestFetchTopAndFlame(t *testing.T) {
	if testing.Short() {
		t.Skip("takes a 2 s CPU profile")
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/profile", nhpprof.Profile)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	stop := make(chan struct{})
	go burnTareTestCPU(stop)
	defer close(stop)
	before := processCPU(t)
	p, err := Fetch(context.Background(), Target{Component: "test", Base: srv.URL}, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	cpuMs := float64(processCPU(t)-before) / float64(time.Millisecond)
	s := Summarize("test", p, 10)
	// The kernel's count of this process's CPU (getrusage) over the fetch, a peer of the profile's samples:
	// within 10% (100 Hz sampling over about 2 s, plus the little run outside the profile's window).
	t.Logf("profile %.1f ms of CPU, getrusage %.1f ms", s.TotalMs, cpuMs)
	if math.Abs(s.TotalMs-cpuMs) > 0.10*cpuMs {
		t.Errorf("profile holds %.1f ms of CPU, the kernel counted %.1f ms for the process", s.TotalMs, cpuMs)
	}
	if len(s.Top) == 0 || !strings.HasSuffix(s.Top[0].Name, "burnTareTestCPU") {
		t.Fatalf("top = %+v, want burnTareTestCPU first", s.Top)
	}
	// One goroutine spinning: about one core, as the profile's own duration measures it.
	if s.Mc < 600 || s.Mc > 1300 || s.Top[0].FlatPct < 50 {
		t.Errorf("profile says %.0fm, burner %.0f%%; want about one core, mostly the burner", s.Mc, s.Top[0].FlatPct)
	}
	var svg bytes.Buffer
	if err := FlameSVG(&svg, "test <cpu>", p); err != nil {
		t.Fatal(err)
	}
	if err := xml.Unmarshal(svg.Bytes(), new(struct{})); err != nil {
		t.Errorf("flame graph is not well-formed XML: %v", err)
	}
	if !strings.Contains(svg.String(), "burnTareTestCPU") || !strings.Contains(svg.String(), "test &lt;cpu&gt;") {
		t.Errorf("flame graph lacks the burner or the escaped title")
	}
	// The laid-out frames: the root spans the profile's CPU, children nest inside their parents, and the
	// burner is the widest leaf.
	fs := Frames(p)
	if len(fs) < 2 || fs[0].Level != 0 || fs[0].Start != 0 || math.Abs(fs[0].End-s.TotalMs) > 0.1 {
		t.Fatalf("frames start %+v, want the root over %.1f ms", fs[:min(2, len(fs))], s.TotalMs)
	}
	var burner float64
	for i, f := range fs[1:] {
		parent := fs[:i+1]
		ok := false
		for j := len(parent) - 1; j >= 0; j-- {
			if parent[j].Level == f.Level-1 {
				ok = parent[j].Start <= f.Start && f.End <= parent[j].End+1e-9
				break
			}
		}
		if !ok || f.End <= f.Start {
			t.Errorf("frame %+v is not inside its parent", f)
		}
		if strings.HasSuffix(f.Name, "burnTareTestCPU") {
			burner += f.End - f.Start
		}
	}
	if burner < 0.5*s.TotalMs {
		t.Errorf("burnTareTestCPU frames span %.1f of %.1f ms", burner, s.TotalMs)
	}
}

func TestFetchErrorsNameComponentAndReason(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	_, err = Fetch(context.Background(), Target{Component: "etcd", Base: "http://" + addr}, time.Second)
	if err == nil || !strings.Contains(err.Error(), "etcd pprof at http://"+addr) || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("refused: %v", err)
	}
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	_, err = Fetch(context.Background(), Target{Component: "kube-scheduler", Base: srv.URL + "?token=sekret"}, time.Second)
	if err == nil || !strings.Contains(err.Error(), "404") || !strings.Contains(err.Error(), "--profiling") || strings.Contains(err.Error(), "sekret") {
		t.Errorf("not found: %v", err)
	}
	notProfile := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("hello")) }))
	defer notProfile.Close()
	if _, err := Fetch(context.Background(), Target{Component: "x", Base: notProfile.URL}, time.Second); err == nil || !strings.Contains(err.Error(), "not a profile") {
		t.Errorf("not a profile: %v", err)
	}
}

// processCPU is this process's user and system CPU time so far, as the kernel counts it.
func processCPU(t *testing.T) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
