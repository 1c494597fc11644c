// Command overhead is tare's overhead benchmark (make bench-overhead): tare's own CPU and peak memory while
// sampling a node, side by side with pidstat -u -r -d 1 over the same window, in three settings: about 300
// processes, 3,000 idle processes (sleepers the bench starts and removes), and start-up (a 1 s run). CPU
// comes from each run's rusage (wait4), so start-up is included. Runs of one setting are interleaved, so
// drift on the machine hits every run alike; compare ratios within one run of the bench, not across runs.
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
	window       time.Duration
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
	flag.StringVar(&c.compare, "compare", "", "another tare binary (an older build, say) measured at 1 s in the same interleaved runs")
	flag.DurationVar(&c.window, "window", 30*time.Second, "length of each run")
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
	runs := []job{
		{name: "pidstat -u -r -d 1", argv: []string{"pidstat", "-u", "-r", "-d", "1", secs}},
		{name: "tare measure --interval 1s", argv: []string{c.tare, "measure", "-o", "json", "--duration", w, "--interval", "1s"}},
		{name: "tare measure --interval 1s --record", argv: []string{c.tare, "measure", "-o", "json", "--duration", w, "--interval", "1s", "--record", recording}},
		{name: "tare measure --interval 100ms", argv: []string{c.tare, "measure", "-o", "json", "--duration", w, "--interval", "100ms"}},
	}
	runs = withCompare(runs, c, []string{"measure", "-o", "json", "--duration", w, "--interval", "1s"})
	res, err := interleave(ctx, runs, c.reps, c.window)
	if err != nil {
		return err
	}
	fmt.Printf("\n%d processes (%d on the node, %d idle sleepers added):\n\n", cost.CountProcs(), natural, sleepers.len())
	if err := table(os.Stdout, runs, res); err != nil {
		return err
	}
	verdict(fmt.Sprintf("tare measure --interval 1s ≤ %.2f× pidstat, start-up included", c.smallTargetX),
		ratio(res[1], res[0]), "×", c.smallTargetX)
	return nil
}

// many is a node with thousands of idle processes: what tare costs when most processes do nothing.
func many(ctx context.Context, c config, natural int) error {
	sleepers, err := startSleepers(c.idle)
	defer sleepers.stop()
	if err != nil {
		return err
	}
	secs := fmt.Sprint(int(c.window.Seconds()))
	runs := []job{
		{name: "pidstat -u -r -d 1", argv: []string{"pidstat", "-u", "-r", "-d", "1", secs}},
		{name: "tare measure --interval 1s", argv: []string{c.tare, "measure", "-o", "json", "--duration", c.window.String(), "--interval", "1s"}},
	}
	runs = withCompare(runs, c, []string{"measure", "-o", "json", "--duration", c.window.String(), "--interval", "1s"})
	res, err := interleave(ctx, runs, c.reps, c.window)
	if err != nil {
		return err
	}
	fmt.Printf("\n%d processes (%d on the node, %d idle sleepers added):\n\n", cost.CountProcs(), natural, sleepers.len())
	if err := table(os.Stdout, runs, res); err != nil {
		return err
	}
	steady := make([]float64, len(res[1]))
	for i, r := range res[1] {
		steady[i] = r.steady
	}
	verdict(fmt.Sprintf("tare measure --interval 1s ≤ %.0f millicores with %d idle processes, steady state", c.manyTargetMC, c.idle),
		median(steady), " millicores", c.manyTargetMC)
	verdict(fmt.Sprintf("tare measure --interval 1s ≤ %.0f millicores with %d idle processes, start-up included", c.manyTargetMC, c.idle),
		median(millicores(res[1])), " millicores", c.manyTargetMC)
	return nil
}

// startup is tare's fixed cost: a 1 s measurement (start, baseline sample, one interval, summary), next to
// the Go runtime's own start (tare --help) and pidstat's 1 s run.
func startup(ctx context.Context, c config) error {
	runs := []job{
		{name: "pidstat -u -r -d 1 1", argv: []string{"pidstat", "-u", "-r", "-d", "1", "1"}},
		{name: "tare measure --duration 1s", argv: []string{c.tare, "measure", "-o", "json", "--duration", "1s", "--interval", "1s"}},
		{name: "tare --help", argv: []string{c.tare, "--help"}},
	}
	runs = withCompare(runs, c, []string{"measure", "-o", "json", "--duration", "1s", "--interval", "1s"})
	res, err := interleave(ctx, runs, c.startupReps, 0)
	if err != nil {
		return err
	}
	fmt.Printf("\nstart-up, %d processes, %d interleaved repetitions (CPU of the whole run, ms):\n\n", cost.CountProcs(), c.startupReps)
	return startupTable(os.Stdout, runs, res)
}

// withCompare adds a run of the -compare binary with args, when one is given.
func withCompare(runs []job, c config, args []string) []job {
	if c.compare == "" {
		return runs
	}
	name := "[" + filepath.Base(c.compare) + "] tare " + strings.Join(slices.DeleteFunc(slices.Clone(args), func(a string) bool {
		return a == "-o" || a == "json"
	}), " ")
	return append(runs, job{name: name, argv: append([]string{c.compare}, args...)})
}
