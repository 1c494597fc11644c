// Command experiment is the experiment benchmark (make bench-experiment): does tare experiment find a
// small change within its budget, and does it keep its false-positive rate? It runs sequential
// experiments (--mde, --budget) on the upstream lab, interleaved:
//
//   - planted: the baseline against a variant that runs a burner regulated to exactly mde% of the baseline's
//     control-plane CPU (this binary in the testload burn mode, named kube-scheduler so that tare counts it
//     in the control plane). Found when the answer is "changed" upwards; its repeated interval should hold
//     the planted millicores.
//   - A/A: the baseline against an identical variant. Significant here is a false positive.
//
// The first A/A run calibrates the planted load (2% of its pilot's baseline median). It prints each run
// and the rates with exact binomial intervals, the designs tare chose and the wall time.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/tare-dev/tare/internal/compare"
	"github.com/tare-dev/tare/internal/stats"
	"github.com/tare-dev/tare/internal/testload"
)

type options struct {
	tare           string
	planted, aa    int
	mde            float64
	budget         time.Duration
	window, warmup time.Duration
	pilotRounds    int
	profile        string
	noise          time.Duration
	noiseCSV       string
	noiseFrom      string
	trialOverhead  time.Duration
	base           float64
	replicas       int
	concurrent     bool
	designs        time.Duration
	designsLabs    int
	designsFrom    string
	keep           string
}

func main() {
	testload.Main() // the planted burner is this binary in the burn mode
	var o options
	flag.StringVar(&o.tare, "tare", "bin/tare", "tare binary")
	flag.IntVar(&o.planted, "planted", 10, "experiments with the planted change")
	flag.IntVar(&o.aa, "aa", 20, "A/A experiments")
	flag.Float64Var(&o.mde, "mde", 2, "the planted change and the experiments' --mde, % of control-plane CPU")
	flag.DurationVar(&o.budget, "budget", 10*time.Minute, "each experiment's --budget")
	flag.DurationVar(&o.window, "window", 20*time.Second, "measured window per trial")
	flag.DurationVar(&o.warmup, "warmup", 2*time.Second, "warm-up per trial (the labs serve every trial: nothing restarts)")
	flag.IntVar(&o.pilotRounds, "pilot-rounds", 0, "pilot rounds (0: the spec's default, 3, or 2 for a concurrent experiment)")
	flag.StringVar(&o.profile, "profile", "upstream", "lab profile")
	flag.IntVar(&o.replicas, "replicas", 1, "labs side by side in each experiment (target.lab.replicas; above 1: control-plane-only labs, the planted burner beside the first)")
	flag.BoolVar(&o.concurrent, "concurrent", false, "with -replicas K (even, from 4): the variants at once, each on K/2 of the labs (target.lab.concurrent), the planted burner beside each lab of its share")
	flag.DurationVar(&o.noise, "noise", 16*time.Minute, "first, measure the idle lab this long and say where the primary metric's variance comes from (0: skip)")
	flag.StringVar(&o.noiseCSV, "noise-csv", "", "with -noise, also write the control plane's per-second series (one column a component) to this CSV file")
	flag.StringVar(&o.noiseFrom, "noise-from", "", "analyse this CSV (from -noise-csv) instead of measuring a lab (-noise is then not used)")
	flag.DurationVar(&o.trialOverhead, "trial-overhead", time.Second, "a trial's time beside its window and warm-up on one lab, for -noise's arithmetic")
	flag.Float64Var(&o.base, "base", 0, "the baseline's control-plane CPU (m) to plant mde% of; 0: the first A/A run's pilot median")
	flag.DurationVar(&o.designs, "designs", 0, "first, measure -designs-labs idle labs this long and replay concurrent designs on them (0: skip)")
	flag.IntVar(&o.designsLabs, "designs-labs", 24, "labs for -designs")
	flag.StringVar(&o.designsFrom, "designs-from", "", "replay the designs on this tare recording of labs (directories lab-K) instead of measuring")
	flag.StringVar(&o.keep, "keep", "", "keep each experiment's files (spec, experiment.db) under this directory (default: a temporary one, removed)")
	flag.Parse()
	if o.designs > 0 || o.designsFrom != "" {
		if err := designs(o); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
	}
	if o.noise > 0 || o.noiseFrom != "" {
		if err := noise(o); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
	}
	if o.planted+o.aa == 0 {
		return
	}
	if o.concurrent && (o.replicas < 4 || o.replicas%2 != 0) {
		fmt.Fprintln(os.Stderr, "bench: -concurrent needs -replicas K, even and at least 4 (each variant on K/2 labs)")
		os.Exit(2)
	}
	// Ctrl-C, a kill or a hang-up reaches tare experiment as its own interrupt: it stops its labs and
	// keeps its trials; the runs finished so far are reported. A second one ends the bench at once, and
	// tare with it (below).
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	go func() { <-ctx.Done(); stop() }()
	err := run(ctx, o)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// outcome is one experiment's answer.
type outcome struct {
	kind     string // planted or a-a
	decision string
	at       int
	pairs    int
	mean     float64 // mc
	lo, hi   float64
	base     float64
	reached  float64 // %
	rounds   int     // the plan's
	took     time.Duration
}

func run(ctx context.Context, o options) error {
	dir := o.keep
	if dir == "" {
		tmp, err := os.MkdirTemp("", "tare-bench-exp-")
		if err != nil {
			return err
		}
		defer func() { _ = os.RemoveAll(tmp) }()
		dir = tmp
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	var all []outcome
	plantedMC := o.mde / 100 * o.base // 0 without -base: the first A/A run calibrates it
	for i := 0; len(count(all, "planted")) < o.planted || len(count(all, "a-a")) < o.aa; i++ {
		kind := "a-a"
		// After the calibrating A/A run, alternate while both are owed.
		if plantedMC > 0 && len(count(all, "planted")) < o.planted && (i%2 == 1 || len(count(all, "a-a")) >= o.aa) {
			kind = "planted"
		}
		second := "{name: a-again}"
		switch {
		case kind == "planted" && o.concurrent:
			// The baseline is a share's K/2 labs: a burner beside each of the planted share's labs.
			second = fmt.Sprintf(`{name: planted, run: "bash -c 'sleep 100000 | %s=burn exec -a kube-scheduler %s %.4f'"}`,
				testload.EnvMode, self, plantedMC/float64(o.replicas/2))
		case kind == "planted":
			// One burner, beside the first lab (a run command runs beside each replica; the others sleep).
			second = fmt.Sprintf(`{name: planted, run: "bash -c 'if [ $TARE_REPLICA = 1 ]; then sleep 100000 | %s=burn exec -a kube-scheduler %s %.3f; else exec sleep 100000; fi'"}`,
				testload.EnvMode, self, plantedMC)
		}
		target := fmt.Sprintf("{lab: {profile: %s}}", o.profile)
		if o.replicas > 1 {
			target = fmt.Sprintf("{lab: {profile: %s, control_plane_only: true, replicas: %d, concurrent: %t}}", o.profile, o.replicas, o.concurrent)
		}
		pilot := ""
		if o.pilotRounds > 0 {
			pilot = fmt.Sprintf("pilot_rounds: %d\n", o.pilotRounds)
		}
		spec := filepath.Join(dir, fmt.Sprintf("run-%02d.yaml", i))
		if err := os.WriteFile(spec, []byte(fmt.Sprintf(`name: bench-%s
target: %s
warmup: %s
window: %s
primary: control-plane-cpu
guard: {deployment: false, api_latency: false}
variants: [{name: a, baseline: true}, %s]
%s`, kind, target, o.warmup, o.window, second, pilot)), 0o644); err != nil {
			return err
		}
		oc, err := experiment(ctx, o, spec, filepath.Join(dir, fmt.Sprintf("out-%02d", i)), kind)
		if ctx.Err() != nil {
			fmt.Printf("\ninterrupted during run %d (%s): the %d runs before it\n", i+1, kind, len(all))
			report(o, all, plantedMC)
			return errors.New("interrupted")
		}
		if err != nil {
			return err
		}
		all = append(all, oc)
		fmt.Printf("%2d %-7s %-9s round %2d/%2d, %2d pairs: %+6.2fm [%+6.2f, %+6.2f] of %.1fm (%+.1f%%), reached ±%.1f%%, %s\n", i+1, kind, oc.decision, oc.at,
			oc.rounds, oc.pairs, oc.mean, oc.lo, oc.hi, oc.base, 100*oc.mean/oc.base, oc.reached, oc.took.Round(time.Second))
		if plantedMC == 0 {
			plantedMC = o.mde / 100 * oc.base
			fmt.Printf("   the planted change: %.3fm (%.1f%% of %.2fm)\n", plantedMC, o.mde, oc.base)
		}
	}
	report(o, all, plantedMC)
	return nil
}

func experiment(ctx context.Context, o options, spec, out, kind string) (outcome, error) {
	start := time.Now()
	cmd := exec.CommandContext(ctx, o.tare, "experiment", spec, "--out", out, "-o", "json", "--mde", fmt.Sprintf("%g%%", o.mde), "--budget", o.budget.String())
	// Interrupted, the experiment gets one SIGINT (it stops its labs and keeps its trials), and a minute
	// to do so before it is killed. Its own process group: a terminal's Ctrl-C reaches only this bench,
	// since a second interrupt would make tare quit at once, skipping its labs' orderly stop. Should the
	// bench die, tare gets SIGINT (its death signal, the process's: no goroutine here locks its thread).
	// The kernel sends it again as the bench's threads go (tried: twice), so tare quits at once; its
	// labs end with it (an experiment's components die with tare).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGINT}
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = time.Minute
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return outcome{}, fmt.Errorf("tare experiment (%s): %w\n%s", kind, err, stderr.String())
	}
	var r compare.Results
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		return outcome{}, err
	}
	if r.Plan == nil || len(r.Sequential) != 1 {
		return outcome{}, fmt.Errorf("%s: no plan or sequential answer in the results", kind)
	}
	s := r.Sequential[0]
	return outcome{kind: kind, decision: s.Decision, at: s.At, pairs: s.Pairs, mean: float64(s.Mean), lo: float64(s.Lo), hi: float64(s.Hi),
		base: r.Plan.Base, reached: float64(s.ReachedPct), rounds: r.Plan.MaxRounds, took: time.Since(start)}, nil
}

func count(all []outcome, kind string) []outcome {
	var out []outcome
	for _, x := range all {
		if x.kind == kind {
			out = append(out, x)
		}
	}
	return out
}

func report(o options, all []outcome, plantedMC float64) {
	rate := func(k, n int) string {
		if n == 0 {
			return "none run"
		}
		lo, hi := stats.BinomialCI(k, n, 0.95)
		return fmt.Sprintf("%d/%d (%.0f%%, 95%% interval %.0f–%.0f%%)", k, n, 100*float64(k)/float64(max(n, 1)), 100*lo, 100*hi)
	}
	pl, aa := count(all, "planted"), count(all, "a-a")
	found, covered := 0, 0
	for _, x := range pl {
		if x.decision == compare.Changed && x.mean > 0 {
			found++
		}
		if x.lo <= plantedMC && plantedMC <= x.hi {
			covered++
		}
	}
	fp := 0
	for _, x := range aa {
		if x.decision == compare.Changed {
			fp++
		}
	}
	var took []float64
	for _, x := range all {
		took = append(took, x.took.Minutes())
	}
	slices.Sort(took)
	design := "one lab"
	switch {
	case o.concurrent:
		design = fmt.Sprintf("%d control-plane-only labs, the variants at once on %d each, dealt at random every round (concurrent; the lab-level estimate)", o.replicas, o.replicas/2)
	case o.replicas > 1:
		design = fmt.Sprintf("%d control-plane-only labs switched together (replicas)", o.replicas)
	}
	pilot := "the spec's default pilot"
	if o.pilotRounds > 0 {
		pilot = fmt.Sprintf("%d pilot rounds", o.pilotRounds)
	}
	fmt.Printf("\nsequential experiments on the %s lab, %s: --mde %g%% --budget %s, windows of %s after %s of warm-up, %s\n",
		o.profile, design, o.mde, o.budget, o.window, o.warmup, pilot)
	fmt.Printf("planted %.3fm (%g%%): found %s; repeated interval held it %s\n", plantedMC, o.mde, rate(found, len(pl)), rate(covered, len(pl)))
	fmt.Printf("A/A: significant %s (want at most 5%%)\n", rate(fp, len(aa)))
	if len(took) > 0 {
		fmt.Printf("wall time per experiment: median %.1f min, max %.1f min\n", took[len(took)/2], took[len(took)-1])
	}
	var reached []float64
	for _, x := range all {
		if !math.IsNaN(x.reached) {
			reached = append(reached, x.reached)
		}
	}
	if len(reached) > 0 {
		fmt.Printf("sensitivity reached (80%% power): median ±%.1f%% (asked ±%g%%)\n", stats.MedianOf(reached), o.mde)
	}
}
