package cli

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/tare-dev/tare/internal/experiment"
	"github.com/tare-dev/tare/internal/sample"
)

type experimentOptions struct {
	out    string
	resume string
	labDir string
	html   string
	mde    string
	budget time.Duration
	pilot  string
}

func newExperiment(s streams, g *globalOptions) *cobra.Command {
	o := &experimentOptions{}
	cmd := &cobra.Command{
		Use:   "experiment SPEC | --resume DIR",
		Short: "Prove a change cuts overhead: interleaved trials, medians with intervals, Mann–Whitney tests, a UX guard",
		Long: `Run the experiment a spec file (YAML) describes: a baseline and one or more variants (component flags,
Deployment replica counts) or a sweep of one flag over values, on the lab or on any cluster through
commands that apply a variant and wait for it.

Trials run round by round, each variant once per round in a random order (seeded, recorded), so drift
hits every variant alike. Each trial: start the variant (the lab restarted with its flags, warm), the
guard (time from the restart to a Deployment reachable through its Service; median latency of 20 API
GETs), the warm-up (discarded), then the measured window (recorded: DIR/trial-NNN.db). DIR/experiment.db
keeps the spec, the order and every finished trial: Ctrl-C keeps them and --resume DIR continues.

Results per metric (node busy, control-plane CPU, each component's CPU and memory, etcd writes, API
requests per minute, and the guard): each variant's median with its interval; the change from the
baseline as a Hodges–Lehmann shift with its interval and a Mann–Whitney U test, "~" where it is not
significant (benchstat's convention); the smallest change the run could have detected; warnings for too
few trials, outliers and drift. A variant is recommended when its primary metric fell significantly and
no guard worsened beyond the tolerance. A sweep adds a chart of the primary metric against the values.

Sequential (--mde 2%, or mde: in the spec): a pilot of 3 rounds (pilot_rounds) measures the noise of
one pair's difference in the primary metric (trials are paired by round); tare prints the rounds that
detect the change with 80% power and how long they take, adds them, and after every round looks at the
pairs with group-sequential bounds (Lan–DeMets O'Brien–Fleming alpha spending, so the false-positive rate
stays at alpha however often it looks): it stops as soon as the change is significant or its repeated
interval excludes the requested change. --budget 10m sizes the rounds to the time and says when the
requested change is out of its reach; --pilot DIR plans from an earlier experiment of the same lab
instead, before any trial. The results say whether the requested sensitivity was reached.

Ready-made specs: examples/experiments/ (upstream vs tuned, leader election on vs off, etcd
--snapshot-count sweep, lab running vs paused, and the cost of a DaemonSet: node-exporter, process-exporter,
tare's agent). A variant with pause: true is measured with the lab paused (tare lab pause after the guard
and warm-up, unpause after the window). A variant with manifests: [FILE] (or helm: {chart, values}, rendered
with helm template) installs them on the lab after the guard (server-side apply), waits until its DaemonSets' pods are all Ready, and removes them after the
window, waiting its pods out; the daemonset-* metrics are their pods' CPU and memory per node and per pod.` + figuresHelp,
		Example: `  sudo tare experiment examples/experiments/leader-election.yaml
  sudo tare experiment examples/experiments/etcd-snapshot-count.yaml --out snap
  sudo tare experiment examples/experiments/leader-election.yaml --mde 2% --budget 10m
  sudo tare experiment --resume snap          # after Ctrl-C
  tare experiment --resume snap -o json        # a finished one: print its results again`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runExperiment(cmd.Context(), s, g, o, args)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.out, "out", "", "directory for the experiment file and the trials' recordings (default tare-experiment-NAME-TIME)")
	f.StringVar(&o.resume, "resume", "", "continue the experiment in this directory (or print its results when it is complete)")
	labDirFlag(f, &o.labDir, "lab-dir", "a lab running here is refused: the experiment starts its own")
	f.StringVar(&o.mde, "mde", "", "the change of the primary metric to detect with 80% power, e.g. 2%: a sequential experiment (spec mde)")
	f.DurationVar(&o.budget, "budget", 0, "wall time for the trials of a sequential experiment, pilot included (spec budget), e.g. 10m")
	f.StringVar(&o.pilot, "pilot", "", "plan a sequential experiment from this earlier experiment directory's trials instead of a pilot")
	htmlFlag(f, &o.html)
	return cmd
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

func runExperiment(ctx context.Context, s streams, g *globalOptions, o *experimentOptions, args []string) error {
	if err := g.validate(); err != nil {
		return err
	}
	if (len(args) == 1) == (o.resume != "") {
		return usageError("give a spec file, or --resume DIR (not both)")
	}
	if err := checkHTML(o.html); err != nil {
		return err
	}
	var st *experiment.Store
	var trials []experiment.Trial
	var err error
	if o.resume != "" {
		if o.mde != "" || o.budget != 0 || o.pilot != "" {
			return usageError("--mde, --budget and --pilot plan a new experiment; --resume goes on with the stored plan")
		}
		if st, trials, err = experiment.Open(ctx, o.resume); err != nil {
			return err
		}
	} else {
		var flagErr error
		spec, err := experiment.Load(args[0], func(spec *experiment.Spec) error {
			flagErr = sequentialFlags(spec, o)
			return flagErr
		})
		if flagErr != nil {
			return flagErr
		}
		if err != nil {
			return usageError("%s: %w", args[0], err)
		}
		var plan *experiment.PlanFrom
		if o.pilot != "" {
			if plan, err = experiment.PlanFromPilot(ctx, spec, o.pilot); err != nil {
				return err
			}
			fmt.Fprintln(s.err, experiment.PlanText(plan.Plan))
		}
		out := o.out
		if out == "" {
			out = fmt.Sprintf("tare-experiment-%s-%s", unsafeName.ReplaceAllString(spec.Name, "-"), time.Now().Format("20060102-150405"))
		}
		pre := &experiment.Runner{Store: &experiment.Store{Dir: out, Spec: spec}}
		if err := pre.Check(ctx, o.labDir); err != nil {
			return usageError("%s: %w", args[0], err)
		}
		if st, trials, err = experiment.Create(ctx, out, spec); err != nil {
			return err
		}
		if plan != nil {
			if trials, err = st.Adopt(ctx, plan.Plan, trials); err != nil {
				_ = st.Close()
				return err
			}
		}
	}
	defer func() { _ = st.Close() }()
	r := &experiment.Runner{Store: st, Roots: g.sampleOptions(sample.Options{}), Version: Version, Progress: s.err, Live: liveLine(s, g)}
	pending := 0
	for _, t := range trials {
		if t.Status != "ok" && t.Status != experiment.StatusStopped {
			pending++
		}
	}
	var runErr error
	if pending > 0 {
		if o.resume != "" {
			if err := r.Check(ctx, o.labDir); err != nil {
				return err
			}
		}
		fmt.Fprintf(s.err, "experiment %s: %d trial(s) to run, recorded in %s\n", st.Spec.Name, pending, st.Dir)
		trials, runErr = r.Run(ctx, trials)
	}
	res := experiment.Analyze(st.Spec, st.Plan, trials)
	if err := render(s, g, res); err != nil {
		return err
	}
	abs, _ := filepath.Abs(st.Dir)
	if err := experimentHTML(s, o.html, "experiment "+abs, res); err != nil {
		return err
	}
	switch {
	case ctx.Err() != nil && (errors.Is(runErr, context.Canceled) || errors.Is(runErr, context.DeadlineExceeded)):
		return fmt.Errorf("interrupted: the finished trials are kept in %s; continue with: tare experiment --resume %s", abs, abs)
	case runErr != nil:
		return fmt.Errorf("%w\nthe experiment stopped; the finished trials are kept in %s (tare experiment --resume %s runs the rest)", runErr, abs, abs)
	}
	fmt.Fprintf(s.err, "recorded in %s (experiment.db; each trial's window in trial-NNN.db, for tare report or tare diff)\n", abs)
	return nil
}

// sequentialFlags puts --mde and --budget into the spec as read, before its check.
func sequentialFlags(spec *experiment.Spec, o *experimentOptions) error {
	if o.mde == "" && o.budget == 0 && o.pilot == "" {
		return nil
	}
	if o.mde != "" {
		var p experiment.Percent
		if err := p.UnmarshalJSON([]byte(strconv.Quote(o.mde))); err != nil {
			return usageError("--mde: %w", err)
		}
		spec.MDE = p
	}
	if o.budget < 0 {
		return usageError("--budget %s: must not be negative", o.budget)
	}
	if o.budget > 0 {
		spec.Budget.Duration = o.budget
	}
	if spec.MDE == 0 {
		return usageError("--budget and --pilot plan a sequential experiment: give --mde (the change to detect, e.g. 2%%) too")
	}
	return nil
}
