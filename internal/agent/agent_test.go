package agent

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tare-dev/tare/internal/summary"
	"github.com/tare-dev/tare/internal/testenv"
	"github.com/tare-dev/tare/internal/testload"
)

// TestAgentBurnerRate scrapes a calibrated burner's process counter twice and compares its rate with the
// burner's own cgroup (the scheduler's account, not the counter tare reads) over exactly the span between
// the two samples the scrapes reflect.
func TestAgentBurnerRate(t *testing.T) {
	requireTiming(t)
	testenv.NeedRoot(t, "taskstats and a cgroup of the burner's own need root")
	pid := testload.StartBurner(t, 300)
	trace := testload.TraceUsage(testload.CPUCgroup(t, fmt.Sprintf("tare-agent-test-%d", os.Getpid()), pid))
	defer trace.Stop()
	r := startAgent(t, Options{Interval: 500 * time.Millisecond})
	r.nextSample(t)
	r.nextSample(t)
	sel := fmt.Sprintf(`pid="%d"`, pid)
	m0 := r.scrape(t)
	time.Sleep(6 * time.Second)
	m1 := r.scrape(t)
	v0, n0 := m0.sum("tare_process_cpu_seconds_total", sel)
	v1, n1 := m1.sum("tare_process_cpu_seconds_total", sel)
	if n0 != 1 || n1 != 1 {
		t.Fatalf("the burner (pid %d) is not among the top processes: %d and %d series\n%s", pid, n0, n1, m1.text)
	}
	a, b := r.sampleTime(t, m0.seq(t)), r.sampleTime(t, m1.seq(t))
	truth, ok := trace.Between(a, b)
	if !ok {
		t.Fatalf("the cgroup trace %s does not cover %s–%s", trace, a, b)
	}
	got := (v1 - v0) / b.Sub(a).Seconds() * 1000
	t.Logf("burner 300m over %s: tare_process_cpu_seconds_total rate %.1fm, its cgroup %.1fm", b.Sub(a), got, truth)
	if d := (got - truth) / truth; math.Abs(d) > 0.05 {
		t.Errorf("the burner's counter rose at %.1fm, its cgroup says %.1fm (%+.1f%%, want within ±5%%)", got, truth, 100*d)
	}
	g0, _ := m0.sum("tare_group_cpu_seconds_total", `group="other"`)
	g1, _ := m1.sum("tare_group_cpu_seconds_total", `group="other"`)
	if g1-g0 < (v1-v0)*0.99 {
		t.Errorf("the burner's group rose by %.3fs, less than the burner's %.3fs", g1-g0, v1-v0)
	}
}

// TestAgentSummaryAgreesWithMetrics reads /summary and checks that its node busy over its window is the
// increase of tare_node_busy_cpu_seconds_total between the window's first and last samples, within the
// summary's resolution.
func TestAgentSummaryAgreesWithMetrics(t *testing.T) {
	r := startAgent(t, Options{Interval: 250 * time.Millisecond, Window: 10 * time.Second})
	busyAt := map[int]float64{}
	scrapes := map[int]scrape{}
	record := func() {
		seq := r.nextSample(t)
		m := r.scrape(t)
		if m.seq(t) == seq {
			busyAt[seq], _ = m.sum("tare_node_busy_cpu_seconds_total")
			scrapes[seq] = m
		}
	}
	for len(busyAt) < 12 {
		record()
	}
	for try := 0; ; try++ {
		record()
		code, body := r.get(t, "/summary?window=2s")
		if code != http.StatusOK {
			t.Fatalf("GET /summary: %d %s", code, body)
		}
		var s summary.Summary
		if err := json.Unmarshal([]byte(body), &s); err != nil {
			t.Fatalf("/summary is not the JSON of tare measure: %v", err)
		}
		first, okA := r.seqAt(s.Window.Start)
		last, okB := r.seqAt(s.Window.End)
		vA, inA := busyAt[first]
		vB, inB := busyAt[last]
		if !okA || !okB || !inA || !inB {
			if try < 5 {
				continue // a sample landed between the scrape and the summary
			}
			t.Fatalf("the summary's window %s–%s is not between scraped samples", s.Window.Start, s.Window.End)
		}
		if s.Window.Seconds < 1.5 || s.Window.Seconds > 2.5 || s.Window.Intervals != last-first {
			t.Errorf("window=2s gave %+v (samples %d to %d)", s.Window, first, last)
		}
		inc := (vB - vA) * 1000
		want := s.Reconcile.NodeBusy * s.Window.Seconds
		res := s.Reconcile.Resolution * s.Window.Seconds
		t.Logf("node busy over %.3fs: /summary %.1f mcore-s, metric increase %.1f mcore-s (resolution ±%.1f)", s.Window.Seconds, want, inc, res)
		if math.Abs(inc-want) > res {
			t.Errorf("/summary says %.1f mcore-s of node busy, the counter rose by %.1f (more than the resolution %.1f apart)", want, inc, res)
		}
		if s.Meta.TareVersion != "test" {
			t.Errorf("summary meta %+v, want the agent's version", s.Meta)
		}
		// Each group's CPU over the window is its counter's increase between the same two samples.
		for _, g := range s.Groups {
			sel := fmt.Sprintf(`group=%q`, g.Name)
			a, _ := scrapes[first].sum("tare_group_cpu_seconds_total", sel, fmt.Sprintf(`group_kind=%q`, g.Kind))
			b, _ := scrapes[last].sum("tare_group_cpu_seconds_total", sel, fmt.Sprintf(`group_kind=%q`, g.Kind))
			if got := g.CPU.Mean * s.Window.Seconds; math.Abs((b-a)*1000-got) > res {
				t.Errorf("group %s: /summary says %.1f mcore-s, its counter rose by %.1f", g.Name, got, (b-a)*1000)
			}
		}
		if len(s.Groups) == 0 {
			t.Error("the summary has no groups")
		}
		return
	}
}

// seqAt is the sample taken at exactly at.
func (r *running) seqAt(at time.Time) (int, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for seq, t := range r.times {
		if t.Equal(at) {
			return seq, true
		}
	}
	return 0, false
}

// contract is every tare_ metric of the agent-metrics contract that a node always has.
var contract = []string{"tare_agent_info", "tare_node_cpus", "tare_node_busy_cpu_seconds_total", "tare_node_cpu_seconds_total",
	"tare_group_cpu_seconds_total", "tare_group_children_cpu_seconds_total", "tare_group_children_runs_total",
	"tare_group_memory_bytes", "tare_group_disk_read_bytes_total", "tare_group_disk_written_bytes_total", "tare_group_threads",
	"tare_unattributed_cpu_cores", "tare_reconciliation_resolution_cores", "tare_process_cpu_seconds_total",
	"tare_process_memory_bytes", "tare_self_cpu_seconds_total", "tare_samples_total", "tare_sample_duration_seconds",
	"tare_ring_samples", "process_cpu_seconds_total", "go_goroutines"}

// TestAgentPromtool checks the exposition with Prometheus's own linter, and that every metric of the
// contract is there, in the text format and in OpenMetrics.
func TestAgentPromtool(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		testenv.Unavailable(t, "promtool not installed (make deps installs Debian's prometheus)")
	}
	r := startAgent(t, Options{Interval: 100 * time.Millisecond, Window: 2 * time.Second, BlockIO: true})
	names := contract
	if os.Geteuid() == 0 { // the block tracepoints need BPF: some direct I/O for the histograms
		names = append(names, "tare_block_io_uncounted_requests_total")
		dd := exec.Command("dd", "if=/dev/zero", "of="+filepath.Join(t.TempDir(), "direct"), "bs=4k", "count=64", "oflag=direct")
		if out, err := dd.CombinedOutput(); err != nil {
			t.Logf("no direct I/O here (dd: %v %s): the block I/O series are not checked", err, out)
		} else {
			names = append(names, "tare_group_block_io_requests_total", "tare_group_block_io_bytes_total", "tare_group_block_io_device_seconds_count")
		}
	}
	r.nextSample(t)
	r.nextSample(t)
	m := r.scrape(t)
	for _, name := range names {
		if _, n := m.sum(name); n == 0 {
			t.Errorf("/metrics has no %s", name)
		}
	}
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = strings.NewReader(m.text)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
	req, _ := http.NewRequest(http.MethodGet, r.url+"/metrics", nil)
	req.Header.Set("Accept", "application/openmetrics-text; version=1.0.0")
	resp, err := r.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/openmetrics-text") {
		t.Errorf("asked for OpenMetrics, got %q", ct)
	}
	var last string
	for sc := bufio.NewScanner(resp.Body); sc.Scan(); {
		last = sc.Text()
	}
	if last != "# EOF" {
		t.Errorf("the OpenMetrics exposition ends with %q, not # EOF", last)
	}
}

// TestAgentSecrets runs a burner whose command line and name carry a token: neither /metrics nor
// /summary may show it.
func TestAgentSecrets(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "--token=SECRETX") // its comm: 15 characters, the whole name
	if err := os.Symlink(exe, link); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(link, "200", "--token=SECRETVALUE")
	cmd.Env = append(os.Environ(), testload.EnvMode+"=burn")
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = stdin.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	if line, _ := bufio.NewReader(stdout).ReadString('\n'); strings.TrimSpace(line) != "ready" {
		t.Fatalf("the burner printed %q", line)
	}
	pid := cmd.Process.Pid
	r := startAgent(t, Options{Interval: 200 * time.Millisecond, Window: 4 * time.Second, Detail: 200 * time.Millisecond})
	r.nextSample(t)
	r.nextSample(t)
	m := r.scrape(t)
	if _, n := m.sum("tare_process_cpu_seconds_total", fmt.Sprintf(`pid="%d"`, pid)); n != 1 {
		t.Fatalf("the burner (pid %d) is not in /metrics: the test would prove nothing\n%s", pid, m.text)
	}
	for series := range m.values {
		if strings.HasPrefix(series, "tare_process_cpu_seconds_total{") && strings.Contains(series, fmt.Sprintf(`pid="%d"`, pid)) {
			t.Logf("the burner in /metrics: %s", series)
		}
	}
	_, sum := r.get(t, "/summary")
	if !strings.Contains(sum, fmt.Sprintf(`"pid": %d,`, pid)) {
		t.Fatalf("the burner (pid %d) is not in /summary: the test would prove nothing", pid)
	}
	for what, body := range map[string]string{"/metrics": m.text, "/summary": sum} {
		for _, secret := range []string{"SECRETVALUE", "SECRETX"} {
			if i := strings.Index(body, secret); i >= 0 {
				t.Errorf("%s shows the secret %s: …%s…", what, secret, body[max(0, i-80):min(len(body), i+40)])
			}
		}
	}
}
