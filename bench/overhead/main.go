// Command overhead is tare's overhead benchmark (make bench-overhead): tare's own CPU and peak memory while
// sampling a node, side by side with pidstat -u -r -d 1 over the same window, in three settings: about 300
// processes (a 30 s window), 3,000 idle processes (sleepers the bench starts and removes; a 60 s window),
// and start-up (a 1 s run). Each setting runs tare once as it chooses its task pass and once with each
// pass forced (TARE_TASK_PASS=open-coded, bpf-iter, proc): a pass this kernel cannot load is reported and
// left out. CPU comes from each run's rusage (wait4), so start-up is included; tare's own report of its BPF
// programs' run time (self_bpf) gives its cost without the task pass's in-kernel time, and with the exec
// tracepoints' time, which runs in other processes and is not in its rusage. Runs of one setting are
// interleaved, so drift on the machine hits every run alike; compare ratios within one run of the bench,
// not across runs.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/tare-dev/tare/bench/internal/cost"
)

// config is the bench's flags.
type config struct {
	tare         string
	compare      string // another tare binary measured in the same runs (before/after comparisons)
	passes       []string
	window       time.Duration
	idleWindow   time.Duration
	procs        int // the node is filled with idle sleepers up to this many processes
	idle         int // idle sleepers added for the many-processes setting
	reps         int
	startupReps  int
	skipMany     bool
	skipSmall    bool
	skipStartup  bool
	smallTargetX float64 // tare measure --interval 1s, as a multiple of pidstat
	manyTargetMC float64 // tare measure --interval 1s with the idle sleepers, in millicores
}

func main() {
	var c config
	flag.StringVar(&c.tare, "tare", "bin/tare", "tare binary to measure")
	flag.StringVar(&c.compare, "compare", "", "another tare binary (an older build, say) measured at 1 s in the same interleaved runs, each -passes pass forced as for -tare")
	passes := flag.String("passes", "open-coded,bpf-iter,proc", "task passes to force (TARE_TASK_PASS), comma-separated; \"\" for none")
	flag.DurationVar(&c.window, "window", 30*time.Second, "length of each run with ~300 processes")
	flag.DurationVar(&c.idleWindow, "idle-window", time.Minute, "length of each run with the idle sleepers")
	flag.IntVar(&c.procs, "procs", 300, "processes on the node in the first setting (idle sleepers are added up to it)")
	flag.IntVar(&c.idle, "idle", 3000, "idle sleepers added in the second setting")
	flag.IntVar(&c.reps, "reps", 3, "repetitions of each run, interleaved; tables show the median and range")
	flag.IntVar(&c.startupReps, "startup-reps", 5, "repetitions of the start-up runs")
	flag.BoolVar(&c.skipSmall, "skip-small", false, "skip the ~300-process setting")
	flag.BoolVar(&c.skipMany, "skip-many", false, "skip the 3,000-idle-process setting")
	flag.BoolVar(&c.skipStartup, "skip-startup", false, "skip the start-up runs")
	flag.Float64Var(&c.smallTargetX, "target-ratio", 1.0/3, "target: tare at 1 s as a multiple of pidstat (~300 processes)")
	flag.Float64Var(&c.manyTargetMC, "target-idle", 10, "target: tare at 1 s with the idle sleepers, millicores")
	flag.Parse()
	if *passes != "" {
		c.passes = strings.Split(*passes, ",")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, c)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench overhead:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, c config) error {
	if os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, "bench overhead: not root: tare runs unprivileged (schedstat, cutime), not as on a node")
	}
	dir, err := os.MkdirTemp("", "tare-bench")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	natural := cost.CountProcs()
	fmt.Printf("tare overhead bench, %s; %d processes on the node before the bench; window %s; %d interleaved repetitions\n",
		time.Now().Format("2006-01-02 15:04"), natural, c.window, c.reps)
	fmt.Println("CPU is each run's own rusage (user+system, start-up included); steady state is tare's self-reported CPU after its baseline sample.")
	if !c.skipSmall {
		if err := small(ctx, c, natural, filepath.Join(dir, "r%d.db")); err != nil {
			return err
		}
	}
	if !c.skipMany {
		if err := many(ctx, c, natural); err != nil {
			return err
		}
	}
	if !c.skipStartup {
		if err := startup(ctx, c); err != nil {
			return err
		}
	}
	return nil
}

// small is the usual node: about c.procs processes, every run of tare next to pidstat.
func small(ctx context.Context, c config, natural int, recording string) error {
	sleepers, err := startSleepers(max(0, c.procs-natural))
	defer sleepers.stop()
	if err != nil {
		return err
	}
	secs := fmt.Sprint(int(c.window.Seconds()))
	w := c.window.String()
	measure1s := []string{"measure", "-o", "json", "--duration", w, "--interval", "1s"}
	runs := []job{
		{name: "pidstat -u -r -d 1", argv: []string{"pidstat", "-u", "-r", "-d", "1", secs}},
		{name: "tare measure --interval 1s", argv: append([]string{c.tare}, measure1s...)},
		{name: "tare measure --interval 1s --record", argv: []string{c.tare, "measure", "-o", "json", "--duration", w, "--interval", "1s", "--record", recording}},
		{name: "tare measure --interval 100ms", argv: []string{c.tare, "measure", "-o", "json", "--duration", w, "--interval", "100ms"}},
	}
	runs = withPasses(ctx, runs, c, measure1s)
	runs = withCompare(runs, c, measure1s)
	res, err := interleave(ctx, runs, c.reps, c.window)
	if err != nil {
		return err
	}
	fmt.Printf("\n%d processes (%d on the node, %d idle sleepers added), %s runs, n=%d each:\n\n", cost.CountProcs(), natural, sleepers.len(), c.window, c.reps)
	if err := table(os.Stdout, runs, res); err != nil {
		return err
	}
	for i, r := range runs {
		if i == 1 || (r.env != nil && !isProc(r)) {
			verdict(fmt.Sprintf("%s ≤ %.2f× pidstat, start-up included", r.name, c.smallTargetX), ratio(res[i], res[0]), "×", c.smallTargetX)
		}
	}
	return nil
}

// many is a node with thousands of idle processes: what tare costs when most processes do nothing.
func many(ctx context.Context, c config, natural int) error {
	sleepers, err := startSleepers(c.idle)
	defer sleepers.stop()
	if err != nil {
		return err
	}
	secs := fmt.Sprint(int(c.idleWindow.Seconds()))
	measure1s := []string{"measure", "-o", "json", "--duration", c.idleWindow.String(), "--interval", "1s"}
	runs := []job{{name: "pidstat -u -r -d 1", argv: []string{"pidstat", "-u", "-r", "-d", "1", secs}}}
	runs = withPasses(ctx, runs, c, measure1s)
	if len(runs) == 1 { // no forced pass: tare as it chooses
		runs = append(runs, job{name: "tare measure --interval 1s", argv: append([]string{c.tare}, measure1s...)})
	}
	runs = withCompare(runs, c, measure1s)
	res, err := interleave(ctx, runs, c.reps, c.idleWindow)
	if err != nil {
		return err
	}
	fmt.Printf("\n%d processes (%d on the node, %d idle sleepers added), %s runs, n=%d each:\n\n", cost.CountProcs(), natural, sleepers.len(), c.idleWindow, c.reps)
	if err := table(os.Stdout, runs, res); err != nil {
		return err
	}
	for i, r := range runs[1:] {
		what := fmt.Sprintf("%s ≤ %.0f millicores with %d idle processes, start-up included", r.name, c.manyTargetMC, c.idle)
		if isProc(r) {
			fmt.Printf("stated: %s: %.2f millicores with %d idle processes, start-up included (no target)\n", r.name, median(millicores(res[i+1])), c.idle)
			continue
		}
		verdict(what, median(millicores(res[i+1])), " millicores", c.manyTargetMC)
	}
	return nil
}

// startup is tare's fixed cost: a 1 s measurement (start, baseline sample, one interval, summary), next to
// the Go runtime's own start (tare --help) and pidstat's 1 s run.
func startup(ctx context.Context, c config) error {
	measure1s := []string{"measure", "-o", "json", "--duration", "1s", "--interval", "1s"}
	runs := []job{
		{name: "pidstat -u -r -d 1 1", argv: []string{"pidstat", "-u", "-r", "-d", "1", "1"}},
		{name: "tare measure --duration 1s", argv: append([]string{c.tare}, measure1s...)},
		{name: "tare --help", argv: []string{c.tare, "--help"}},
	}
	runs = withPasses(ctx, runs, c, measure1s)
	runs = withCompare(runs, c, measure1s)
	res, err := interleave(ctx, runs, c.startupReps, 0)
	if err != nil {
		return err
	}
	fmt.Printf("\nstart-up, %d processes, %d interleaved repetitions (CPU of the whole run, ms):\n\n", cost.CountProcs(), c.startupReps)
	return startupTable(os.Stdout, runs, res)
}

// withPasses adds a run of tare with args for each pass of c.passes this kernel can load: a forced pass
// that cannot load makes tare fail at once, which a 1 s trial finds.
func withPasses(ctx context.Context, runs []job, c config, args []string) []job {
	for _, p := range c.passes {
		env := []string{"TARE_TASK_PASS=" + p}
		trial := job{name: "trial", argv: []string{c.tare, "measure", "-o", "json", "--duration", "1s", "--interval", "1s"}, env: env}
		if _, err := measure(ctx, trial, trial.argv, 0); err != nil {
			fmt.Printf("task pass %s: cannot be forced here, left out: %v\n", p, firstLine(err.Error()))
			continue
		}
		runs = append(runs, job{name: "tare " + shortArgs(args) + " [" + p + "]", argv: append([]string{c.tare}, args...), env: env})
	}
	return runs
}

// shortArgs names a run of tare by its arguments without the output format and the window, which the
// setting's heading gives.
func shortArgs(args []string) string {
	var out []string
	for i := 0; i < len(args); i++ {
		switch args[i] {
		case "-o", "--duration":
			i++
		default:
			out = append(out, args[i])
		}
	}
	return strings.Join(out, " ")
}

// isProc reports a run forced to read /proc without a task pass.
func isProc(r job) bool { return slices.Contains(r.env, "TARE_TASK_PASS=proc") }

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// withCompare adds runs of the -compare binary with args, when one is given: one for each pass of
// c.passes, forced as tare's own runs are (TARE_TASK_PASS), so that before and after compare the same
// pass; one with no pass forced when -passes is empty.
func withCompare(runs []job, c config, args []string) []job {
	if c.compare == "" {
		return runs
	}
	name := "[" + filepath.Base(c.compare) + "] tare " + strings.Join(slices.DeleteFunc(slices.Clone(args), func(a string) bool {
		return a == "-o" || a == "json"
	}), " ")
	if len(c.passes) == 0 {
		return append(runs, job{name: name, argv: append([]string{c.compare}, args...)})
	}
	for _, p := range c.passes {
		runs = append(runs, job{name: name + " [" + p + "]", argv: append([]string{c.compare}, args...), env: []string{"TARE_TASK_PASS=" + p}})
	}
	return runs
}
