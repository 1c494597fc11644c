package cli

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tare-dev/tare/internal/agent"
	"github.com/tare-dev/tare/internal/promconf"
	"github.com/tare-dev/tare/internal/promread"
	"github.com/tare-dev/tare/internal/promread/promtest"
	"github.com/tare-dev/tare/internal/sample"
	"github.com/tare-dev/tare/internal/testload"
)

// TestReportPrometheusRealAgent: a real tare agent, in-process, samples this machine while a calibrated
// burner runs in a pod's cgroup; a real Prometheus scrapes the agent every second; tare report
// --prometheus reads the pod's CPU back within 5% of what the pod's cgroup says it used over the window.
func TestReportPrometheusRealAgent(t *testing.T) {
	requireTiming(t)
	requireRoot(t)
	t.Parallel()
	uid := testload.PodUID(0x7a1d2c3b)
	ctr := strings.Repeat("feed", 16)
	pid := testload.StartBurner(t, 250)
	testload.KubepodsCgroup(t, uid, ctr, pid)
	trace := testload.TraceUsage(podCgroupUsage(t, uid, ctr))
	t.Cleanup(trace.Stop)

	addr := startAgent(t, "agent-node")
	cfg, err := promconf.Static(promconf.StaticOptions{Interval: promtest.Interval, Targets: []promconf.Target{
		{Address: addr, Labels: map[string]string{"node": "agent-node", "namespace": "tare", "pod": "tare-agent-abcde"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	rules, err := promconf.Read(promconf.RulesFile)
	if err != nil {
		t.Fatal(err)
	}
	srv := promtest.Start(t, cfg, map[string][]byte{promconf.RulesFile: rules})
	const window = 10 * time.Second
	srv.WaitCovered(t, 1, window)

	out, errOut, err := run(t.Context(), "report", "--prometheus", srv.URL, "--window", "10s", "-o", "json")
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	var rep promread.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(rep.Nodes) != 1 || rep.Nodes[0].Name != "agent-node" {
		t.Fatalf("nodes %+v; want agent-node", rep.Nodes)
	}
	// Prometheus stamps a scrape with its start; the agent's counters are those of its last sample, up to
	// an interval older. Over a steady burner that shifts the window, not the rate.
	want, ok := trace.Between(rep.Time.Add(-window), rep.Time)
	if !ok {
		t.Fatalf("the cgroup trace %v does not cover the window ending %v", trace, rep.Time)
	}
	// The node was at least as busy as the burner's cgroup says the burner alone was, and at most all CPUs
	// over the window and one sample interval: the increase between two scrapes is that of the agent's
	// samples before each, which a busy machine takes late, so up to one interval more than the scrapes'
	// stamps span (2.109 cores of 2 on a busy machine).
	if n := rep.Nodes[0]; 1000*n.BusyCores < 0.95*want || n.BusyCores > n.CPUs*(window+agentInterval).Seconds()/window.Seconds() {
		t.Errorf("node busy %.3f cores of %g; the burner's cgroup alone used %.1fm", n.BusyCores, n.CPUs, want)
	}
	for _, p := range rep.Cluster.Pods {
		if p.Pod != uid {
			continue
		}
		got := 1000 * p.CPUCores
		t.Logf("pod %q/%s: report %.1fm, cgroup %.1fm over the %v ending %v", p.Namespace, p.Pod, got, want, window, rep.Time)
		if math.Abs(got-want) > 0.05*want {
			t.Errorf("pod %s: report says %.1fm, its cgroup used %.1fm over the window", uid, got, want)
		}
		if p.Namespace == "tare" {
			t.Errorf("the pod's namespace is the agent's (%q): honor_labels did not keep the measured pod's", p.Namespace)
		}
		return
	}
	t.Errorf("pod %s missing from %+v", uid, rep.Cluster.Pods)
}

// agentInterval is how often startAgent's agent samples.
const agentInterval = 500 * time.Millisecond

// startAgent runs tare agent in-process on a loopback port until the test ends, and waits until it has
// taken its first sample.
func startAgent(t *testing.T, node string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- agent.Run(ctx, agent.Options{Listener: ln, Interval: agentInterval, Window: 30 * time.Second,
			TopProcesses: 5, Node: node, Version: "test",
			Sampler: sample.Options{ProcRoot: "/proc", SysRoot: "/sys", HostRoot: "/"}})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("tare agent: %v", err)
		}
	})
	addr := ln.Addr().String()
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return addr
			}
		}
		select {
		case err := <-done:
			t.Fatalf("tare agent stopped before its first sample: %v", err)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("tare agent not healthy within 20 s")
		}
	}
}

// podCgroupUsage reads the cumulative CPU of the pod container cgroup testload.KubepodsCgroup made: the
// scheduler's own account, not the per-process counters tare reads.
func podCgroupUsage(t *testing.T, uid, ctr string) func() time.Duration {
	t.Helper()
	rel := filepath.Join("kubepods", "burstable", "pod"+uid, ctr)
	v1 := filepath.Join("/sys/fs/cgroup/cpuacct", rel, "cpuacct.usage")
	v2 := filepath.Join("/sys/fs/cgroup", rel, "cpu.stat")
	return func() time.Duration {
		if b, err := os.ReadFile(v1); err == nil {
			ns, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
			if err != nil {
				t.Errorf("%s: %v", v1, err)
			}
			return time.Duration(ns)
		}
		b, err := os.ReadFile(v2)
		if err != nil {
			t.Errorf("reading the pod cgroup's CPU: %v", err)
			return 0
		}
		for line := range strings.Lines(string(b)) {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "usage_usec "); ok {
				us, _ := strconv.ParseInt(v, 10, 64)
				return time.Duration(us) * time.Microsecond
			}
		}
		return 0
	}
}
