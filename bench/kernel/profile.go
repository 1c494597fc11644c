package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"golang.org/x/sys/unix"
)

// profiler is one condition of the profiler runs: a command sampling every CPU for a span (nil: a window
// with no profiler), and how to read the samples it took from its output.
type profiler struct {
	name    string
	argv    func(out string, span time.Duration) []string
	samples func(stdout, stderr []byte) (samples, lost int, err error)
	// report, when set, names the frames of the output afterwards (perf report): its CPU is shown added to
	// the run's, as tare profile names them within its run.
	report func(out string) []string
}

// profileRun is one finished run or window.
type profileRun struct {
	cpu     time.Duration // the profiler's rusage, its children included
	report  time.Duration // the report's rusage
	wall    time.Duration
	samples int
	lost    int
	size    int64   // output file, bytes
	rate    float64 // the spinner's work per CPU-second over the run
}

func profilers(ctx context.Context, c config) error {
	dir, err := os.MkdirTemp("", "tare-bench-kernel")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	conds := []profiler{
		{name: "no profiler"},
		{name: "tare profile --frequency 99",
			argv: func(out string, span time.Duration) []string {
				return []string{c.tare, "-o", "json", "profile", "--duration", span.String(), "--frequency", "99", "--pprof", out}
			},
			samples: tareSamples},
		{name: "perf record -F 99 -a -g",
			// -N: no copies of the sampled binaries in ~/.debug (the build-ids are still collected).
			argv: func(out string, span time.Duration) []string {
				return []string{"perf", "record", "-F", "99", "-a", "-g", "-N", "-o", out, "--", "sleep", strconv.FormatFloat(span.Seconds(), 'f', -1, 64)}
			},
			samples: perfSamples,
			report: func(out string) []string {
				return []string{"perf", "report", "-i", out, "--stdio"}
			}},
	}
	spin := startSpinner()
	defer spin.close()
	fmt.Printf("\nprofilers: %s each, %d repetitions interleaved, one core kept busy by a spinning thread (the known load)\n", c.span, c.reps)
	res := make([][]profileRun, len(conds))
	for rep := range c.reps {
		for _, i := range order(rep, len(conds)) {
			r, err := profileOnce(ctx, conds[i], filepath.Join(dir, fmt.Sprintf("out%d-%d", i, rep)), c.span, spin)
			if err != nil {
				return fmt.Errorf("%s: %w", conds[i].name, err)
			}
			res[i] = append(res[i], r)
			fmt.Fprintf(os.Stderr, "  %s: %.2fm, %d samples, spinner %.4g/s\n", conds[i].name,
				r.cpu.Seconds()/c.span.Seconds()*1000, r.samples, r.rate)
		}
	}
	return profileTable(conds, res, c.span)
}

// profileOnce runs p over span (or waits span when p has no command) and reads what it cost.
func profileOnce(ctx context.Context, p profiler, out string, span time.Duration, spin *spinner) (profileRun, error) {
	s0, t0 := spin.now(), time.Now()
	if p.argv == nil {
		if err := wait(ctx, span); err != nil {
			return profileRun{}, err
		}
		return profileRun{wall: time.Since(t0), rate: spin.rate(s0)}, nil
	}
	run, err := runToEnd(ctx, p.argv(out, span))
	if err != nil {
		return profileRun{}, err
	}
	r := profileRun{cpu: run.cpu, wall: time.Since(t0), rate: spin.rate(s0)}
	if r.samples, r.lost, err = p.samples(run.stdout, run.stderr); err != nil {
		return profileRun{}, err
	}
	st, err := os.Stat(out)
	if err != nil {
		return profileRun{}, fmt.Errorf("no output: %w", err)
	}
	r.size = st.Size()
	if p.report != nil {
		rep, err := runToEnd(ctx, p.report(out))
		if err != nil {
			return profileRun{}, err
		}
		r.report = rep.cpu
	}
	return r, os.Remove(out)
}

// tareSamples reads the samples from tare profile -o json.
func tareSamples(stdout, _ []byte) (samples, lost int, err error) {
	var s struct {
		Samples int `json:"samples"`
		Lost    int `json:"lost_samples"`
	}
	if err := json.Unmarshal(stdout, &s); err != nil {
		return 0, 0, fmt.Errorf("reading tare profile's json: %w", err)
	}
	return s.Samples, s.Lost, nil
}

var (
	perfCaptured = regexp.MustCompile(`\((\d+) samples\)`)
	perfLost     = regexp.MustCompile(`Lost (\d+) chunks`)
)

// perfSamples reads the samples from perf record's closing line, "[ perf record: Captured and wrote 0.1 MB
// FILE (192 samples) ]", and its lost-chunk warning if any.
func perfSamples(_, stderr []byte) (samples, lost int, err error) {
	m := perfCaptured.FindSubmatch(stderr)
	if m == nil {
		return 0, 0, fmt.Errorf("no sample count in perf record's output: %q", stderr)
	}
	samples, err = strconv.Atoi(string(m[1]))
	if l := perfLost.FindSubmatch(stderr); l != nil {
		lost, _ = strconv.Atoi(string(l[1]))
	}
	return samples, lost, err
}

func profileTable(conds []profiler, res [][]profileRun, span time.Duration) error {
	base := make([]float64, len(res[0]))
	for i, r := range res[0] {
		base[i] = r.rate
	}
	baseRate := median(base)
	fmt.Printf("\nCPU is each run's rusage (its children included, start-up and writing the output too) over the %s it profiled.\n", span)
	fmt.Println("The spinner's work per CPU-second of its thread, against the median of the windows with no profiler, shows the sampling's cost in the kernel on the busy core; as millicores of that core in the last column.")
	fmt.Println()
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOOL\tMILLICORES (median, min–max)\tSAMPLES (median)\tLOST\tCPU PER SAMPLE\tOUTPUT (median)\tSPINNER WORK PER CPU-S (median, min–max)\tIN-KERNEL MILLICORES")
	mc := make([]float64, len(conds))
	reported := 0.0 // perf record's CPU and perf report's
	for i, p := range conds {
		var mcs, smp, perSample, size, rate, kernel []float64
		lost := 0
		for _, r := range res[i] {
			mcs = append(mcs, r.cpu.Seconds()/span.Seconds()*1000)
			smp = append(smp, float64(r.samples))
			if r.samples > 0 {
				perSample = append(perSample, float64(r.cpu.Microseconds())/float64(r.samples))
			}
			size = append(size, float64(r.size)/1024)
			rate = append(rate, r.rate/baseRate*100)
			kernel = append(kernel, (1-r.rate/baseRate)*1000)
			lost += r.lost
		}
		if p.argv == nil {
			fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t-\t%s\t%s\n", p.name, spread("%.2f%%", rate), spread("%.2f", kernel))
			continue
		}
		mc[i] = median(mcs)
		fmt.Fprintf(tw, "%s\t%s\t%.0f\t%d\t%.0f µs\t%.0f KiB\t%s\t%s\n", p.name, spread("%.2f", mcs), median(smp), lost,
			median(perSample), median(size), spread("%.2f%%", rate), spread("%.2f", kernel))
		if p.report == nil {
			continue
		}
		withReport := make([]float64, len(res[i]))
		for j, r := range res[i] {
			withReport[j] = (r.cpu + r.report).Seconds() / span.Seconds() * 1000
		}
		reported = median(withReport)
		fmt.Fprintf(tw, "  + %s\t%s\t\t\t\t\t\t\n", strings.Join(p.report("FILE"), " "), spread("%.2f", withReport))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Printf("tare ÷ perf record, CPU: %.2f×; tare ÷ (perf record + perf report): %.2f×\n", mc[1]/mc[2], mc[1]/reported)
	state := "met"
	if mc[1] >= 10 {
		state = "NOT met"
	}
	fmt.Printf("target: tare profile at 99 Hz under 1%% of a core (10 millicores) on %d CPUs: %s (%.2f millicores)\n", runtime.NumCPU(), state, mc[1])
	fmt.Println("perf samples idle CPUs too (cpu-clock, -a); tare profile does not (idle CPUs are not sampled).")
	fmt.Printf("the spinner's windows with no profiler spread over %.1f millicores of its core: an in-kernel cost smaller than that is not resolved here.\n",
		(slices.Max(base)-slices.Min(base))/baseRate*1000)
	return nil
}

// spinner keeps one core busy with fixed units of work and counts them against its thread's own CPU time.
// A profiler's sampling interrupts on that core are charged to the interrupted thread (this kernel has no
// IRQ_TIME_ACCOUNTING), so they lower its work per CPU-second; other processes that take the core from it
// do not.
type spinner struct {
	at   atomic.Pointer[spun]
	stop atomic.Bool
	done chan struct{}
}

// spun is the spinner's progress: units of work done, and its thread's CPU time when it had done them.
type spun struct {
	units uint64
	cpu   time.Duration
}

func startSpinner() *spinner {
	s := &spinner{done: make(chan struct{})}
	s.at.Store(&spun{})
	go func() {
		defer close(s.done)
		runtime.LockOSThread()
		var n uint64
		x := 1.0
		for !s.stop.Load() {
			for range 1 << 14 {
				x = x*1.0000001 + 1e-9
			}
			if n++; n%64 == 0 {
				var ts unix.Timespec
				_ = unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts)
				s.at.Store(&spun{units: n, cpu: time.Duration(ts.Nano())})
			}
		}
		_ = x
	}()
	return s
}

// rate is the work done per CPU-second since from.
func (s *spinner) rate(from spun) float64 {
	now := s.now()
	return float64(now.units-from.units) / (now.cpu - from.cpu).Seconds()
}

func (s *spinner) now() spun { return *s.at.Load() }

func (s *spinner) close() {
	s.stop.Store(true)
	<-s.done
}
