// Command agent is tare agent's cost benchmark (make bench-agent): tare agent, prometheus-node-exporter and
// prometheus-process-exporter (every process grouped by comm) run side by side on the same node, each
// scraped over loopback every --scrape by the bench for --duration. It prints each one's CPU (the thread
// group's runtime from taskstats, in nanoseconds, over the scraped span, after a warm-up scrape), peak RSS
// (VmHWM) and series count, the ratios agent/node-exporter and agent/process-exporter, and whether the
// targets are met: the agent costs less CPU than process-exporter and at most twice node-exporter.
//
// --churn RATE makes the node busy in the way that costs tare agent most, reproducibly: the bench starts RATE
// short processes (/bin/true) a second, evenly spaced, from the warm-up to the end. --compare OLD runs a
// second tare binary beside the first, so that a change is measured against the build before it in the
// same run.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/tare-dev/tare/bench/internal/cost"
)

// config is the bench's flags.
type config struct {
	tare     string
	duration time.Duration
	scrape   time.Duration
	interval time.Duration
	basePort int
	churn    float64
	compare  string
}

func main() {
	var c config
	flag.StringVar(&c.tare, "tare", "bin/tare", "tare binary to run as the agent")
	flag.DurationVar(&c.duration, "duration", 2*time.Minute, "how long the three are scraped")
	flag.DurationVar(&c.scrape, "scrape", 15*time.Second, "scrape interval (Prometheus's default)")
	flag.DurationVar(&c.interval, "interval", time.Second, "tare agent's --interval")
	flag.IntVar(&c.basePort, "port", 19847, "first of four loopback ports the exporters listen on")
	flag.Float64Var(&c.churn, "churn", 0, "short processes (/bin/true) the bench starts a second while it runs (0: none)")
	flag.StringVar(&c.compare, "compare", "", "another tare binary run as a second agent beside the first (an earlier build)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, c)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench agent:", err)
		os.Exit(1)
	}
}

// exporter is one of the three, running.
type exporter struct {
	name string
	url  string
	cmd  *exec.Cmd
	// measured over the scraped span
	cpu0, cpu1 time.Duration
	series     int
	bytes      int
	scrapes    int
}

// processExporterConfig groups every process by its comm, the closest process-exporter comes to tare's
// per-process view.
const processExporterConfig = `process_names:
  - name: "{{.Comm}}"
    cmdline:
    - '.+'
`

func run(ctx context.Context, c config) error {
	if os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, "bench agent: not root: tare runs unprivileged (schedstat, cutime), not as on a node")
	}
	if c.churn < 0 || c.churn > 1000 {
		return fmt.Errorf("--churn %v: give 0 to 1000 process starts a second", c.churn)
	}
	bins := []string{c.tare, "prometheus-node-exporter", "prometheus-process-exporter"}
	if c.compare != "" {
		bins = append(bins, c.compare)
	}
	for _, bin := range bins {
		if _, err := exec.LookPath(bin); err != nil {
			return fmt.Errorf("%s: %w (make deps installs the exporters; make build builds tare)", bin, err)
		}
	}
	dir, err := os.MkdirTemp("", "tare-bench-agent")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	pecfg := filepath.Join(dir, "process-exporter.yml")
	if err := os.WriteFile(pecfg, []byte(processExporterConfig), 0o644); err != nil {
		return err
	}
	addr := func(i int) string { return fmt.Sprintf("127.0.0.1:%d", c.basePort+i) }
	exps := []*exporter{
		{name: "tare agent", url: "http://" + addr(0) + "/metrics",
			cmd: exec.Command(c.tare, "agent", "--listen", addr(0), "--interval", c.interval.String())},
		{name: "node-exporter", url: "http://" + addr(1) + "/metrics",
			cmd: exec.Command("prometheus-node-exporter", "--web.listen-address="+addr(1))},
		{name: "process-exporter", url: "http://" + addr(2) + "/metrics",
			cmd: exec.Command("prometheus-process-exporter", "-web.listen-address", addr(2), "-config.path", pecfg)},
	}
	if c.compare != "" {
		exps = append(exps, &exporter{name: "tare agent (old)", url: "http://" + addr(3) + "/metrics",
			cmd: exec.Command(c.compare, "agent", "--listen", addr(3), "--interval", c.interval.String())})
	}
	for _, e := range exps {
		log, err := os.Create(filepath.Join(dir, strings.ReplaceAll(e.name, " ", "-")+".log"))
		if err != nil {
			return err
		}
		defer log.Close()
		e.cmd.Stdout, e.cmd.Stderr = log, log
		if err := e.cmd.Start(); err != nil {
			return fmt.Errorf("starting %s: %w", e.name, err)
		}
		defer cost.Stop(e.cmd)
	}
	if c.churn > 0 {
		churnCtx, stopChurn := context.WithCancel(ctx)
		done := churn(churnCtx, c.churn)
		defer func() { stopChurn(); <-done }()
	}
	client := &http.Client{Timeout: 10 * time.Second}
	defer client.CloseIdleConnections()
	for _, e := range exps { // warm-up: each answers one scrape before the span starts
		if err := waitReady(ctx, client, e); err != nil {
			return err
		}
	}
	fmt.Printf("tare agent bench, %s: %d processes on the node; each exporter scraped every %s over loopback for %s; tare agent --interval %s\n",
		time.Now().Format("2006-01-02 15:04"), cost.CountProcs(), c.scrape, c.duration, c.interval)
	for _, e := range exps {
		if e.cpu0, err = cost.CPU(e.cmd.Process.Pid); err != nil {
			return fmt.Errorf("%s: %w", e.name, err)
		}
	}
	forks0 := forks()
	start := time.Now()
	tick := time.NewTicker(c.scrape)
	defer tick.Stop()
	for time.Since(start) < c.duration {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		for _, e := range exps {
			if err := scrape(ctx, client, e); err != nil {
				return err
			}
		}
	}
	span := time.Since(start)
	for _, e := range exps {
		if e.cpu1, err = cost.CPU(e.cmd.Process.Pid); err != nil {
			return fmt.Errorf("%s: %w", e.name, err)
		}
	}
	fmt.Printf("%.1f processes started per second on the node during the span (tare agent follows each start: exec tracepoints or the proc connector, and taskstats)\n",
		float64(forks()-forks0)/span.Seconds())
	return report(os.Stdout, exps, span)
}

// churn starts rate short processes a second, evenly spaced, until ctx ends; the channel closes when the last
// one has been waited for.
func churn(ctx context.Context, rate float64) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			_ = exec.Command("/bin/true").Run() // lives about a millisecond; a slow start only delays the next
		}
	}()
	return done
}

// forks is the number of processes started since boot (the processes line of /proc/stat).
func forks() uint64 {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "processes "); ok {
			n, _ := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

func report(w io.Writer, exps []*exporter, span time.Duration) error {
	mc := make([]float64, len(exps))
	fmt.Fprintf(w, "%-17s %10s %12s %13s %8s %12s\n", "EXPORTER", "CPU", "CPU-SECONDS", "PEAK-RSS", "SERIES", "SCRAPE-BYTES")
	for i, e := range exps {
		cpu := e.cpu1 - e.cpu0
		mc[i] = cpu.Seconds() / span.Seconds() * 1000
		hwm, err := cost.PeakRSS(e.cmd.Process.Pid)
		if err != nil {
			return fmt.Errorf("%s: %w", e.name, err)
		}
		fmt.Fprintf(w, "%-17s %9.2fm %11.3fs %10.1f MiB %8d %12d\n", e.name, mc[i], cpu.Seconds(), float64(hwm)/(1<<20), e.series, e.bytes/max(e.scrapes, 1))
	}
	vsNode, vsProc := ratio(mc[0], mc[1]), ratio(mc[0], mc[2])
	fmt.Fprintf(w, "agent/node-exporter CPU %.2fx (target ≤ 2x: %s); agent/process-exporter CPU %.2fx (target < 1x: %s)\n",
		vsNode, met(vsNode <= 2), vsProc, met(vsProc < 1))
	if len(exps) > 3 {
		fmt.Fprintf(w, "agent/old agent CPU %.2fx\n", ratio(mc[0], mc[3]))
	}
	fmt.Fprintln(w, "node-exporter and process-exporter work only when scraped; tare agent samples every --interval whether scraped or not.")
	return nil
}

func ratio(a, b float64) float64 {
	if b <= 0 {
		return 0
	}
	return a / b
}

func met(ok bool) string {
	if ok {
		return "met"
	}
	return "not met"
}

// waitReady scrapes e until it answers (30 s at most).
func waitReady(ctx context.Context, client *http.Client, e *exporter) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := scrape(ctx, client, e)
		if err == nil {
			e.scrapes, e.bytes = 0, 0
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not answer within 30s: %w", e.name, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// scrape fetches e's metrics and counts its series (lines that are not comments).
func scrape(ctx context.Context, client *http.Client, e *exporter) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("scraping %s: %w", e.name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("scraping %s: %s", e.name, resp.Status)
	}
	series, n := 0, 0
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		n += len(sc.Bytes()) + 1
		if line := sc.Text(); line != "" && line[0] != '#' {
			series++
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("scraping %s: %w", e.name, err)
	}
	e.series, e.bytes, e.scrapes = series, e.bytes+n, e.scrapes+1
	return nil
}
