package experiment

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/tare-dev/tare/internal/audit"
	"github.com/tare-dev/tare/internal/compare"
	"github.com/tare-dev/tare/internal/kube"
	"github.com/tare-dev/tare/internal/lab"
	"github.com/tare-dev/tare/internal/progress"
	"github.com/tare-dev/tare/internal/sample"
	"github.com/tare-dev/tare/internal/session"
	"github.com/tare-dev/tare/internal/summary"
)

// Runner runs the planned trials of an experiment.
type Runner struct {
	Store *Store
	// Roots are where the measured host's files are: ProcRoot, SysRoot, HostRoot and CgroupRoot of
	// sample.Options (the rest is set per trial).
	Roots   sample.Options
	Version string
	// Progress receives one line per step (nil: quiet).
	Progress io.Writer
	// Live is the status line on a terminal (nil: none); steps are printed above it.
	Live *progress.Line
}

// ErrStart says a variant's cluster did not start; the experiment stops there.
var ErrStart = errors.New("a variant did not start")

// LabDir is where the experiment's own lab lives (kept between trials for warm starts); replicas beside
// it are in labDirs.
func (r *Runner) LabDir() string { return filepath.Join(r.Store.Dir, "lab") }

// labDirs are the experiment's labs: LabDir, then DIR/lab-2, DIR/lab-3, ... for replicas.
func (r *Runner) labDirs() []string {
	dirs := []string{r.LabDir()}
	if lt := r.Store.Spec.Target.Lab; lt != nil {
		for k := 2; k <= lt.replicas(); k++ {
			dirs = append(dirs, filepath.Join(r.Store.Dir, fmt.Sprintf("lab-%d", k)))
		}
	}
	return dirs
}

// replicaPortStep is how far each replica's ports are from the previous one's (lab.UpOptions.PortOffset).
const replicaPortStep = 100

// replicaStagger is the span the replicas' starts are spread over: the idle control plane's strongest
// period (bench/experiment -noise: a burst every 120 s, the API server and the controller manager at
// once). Started that far apart, the replicas' bursts fall evenly over the period, so that in the sum of
// their CPU the periodic part mostly cancels and what is left, each lab's own noise, is independent. A
// retune restarts the varied components of every lab at once, in step again; their own 120 s bursts then
// come after a trial's window (20-30 s), and the components left running keep their spread.
const replicaStagger = 2 * time.Minute

func (r *Runner) say(format string, a ...any) {
	if r.Live != nil {
		r.Live.Printf(format, a...)
		return
	}
	if r.Progress != nil {
		fmt.Fprintf(r.Progress, format+"\n", a...)
	}
}

// Check verifies what can be checked before any trial: the lab's flags exist on the installed
// components, and no other lab holds the lab's ports.
func (r *Runner) Check(ctx context.Context, userLab string) error {
	spec := r.Store.Spec
	if spec.Target.Lab == nil {
		return nil
	}
	if err := lab.CheckInstalled(spec.Target.Lab.BinDir, spec.Target.Lab.ControlPlaneOnly); err != nil {
		return err
	}
	if l, err := lab.Open(userLab); err == nil && userLab != r.LabDir() {
		return fmt.Errorf("a lab is running in %s: the experiment starts its own labs on the same ports; stop it first with `tare lab down` (it is left alone)", l.Dir)
	}
	var sets []lab.Tuning
	for _, x := range spec.Target.Lab.Set {
		t, _ := lab.ParseSet(x)
		sets = append(sets, t)
	}
	for _, v := range spec.Variants {
		ts, _ := v.tunings()
		sets = append(sets, ts...)
	}
	return lab.CheckSets(ctx, spec.Target.Lab.BinDir, sets)
}

// Run runs every trial not yet done, in plan order, saving each as it finishes. It stops at the first
// variant that does not start (ErrStart, with the component's log tail) or when ctx is cancelled; the
// trials finished so far stay in the store. The labs are stopped in every case; should tare die first,
// its reaper (lab.StartReaper) stops them. Processes an earlier tare left of the run commands are stopped first.
func (r *Runner) Run(ctx context.Context, trials []Trial) ([]Trial, error) {
	spec := r.Store.Spec
	var runErr error
	began, ran := time.Now(), 0
	defer r.Live.Done()
	// The reaper cleans up should tare die before the end (released once the labs are down below). Without
	// one, tare still waits for the lock another tare on the experiment, or an earlier one's reaper, holds.
	var labs []string
	if spec.Target.Lab != nil {
		labs = r.labDirs()
	}
	rp, err := lab.StartReaper(ctx, reaperJob(r.Store.Dir, labs), r.say)
	if err != nil && ctx.Err() == nil {
		r.say("warning: %v; should tare be killed, its labs' processes still end, and tare lab down --dir cleans the rest", err)
		err = lab.AwaitReaperLock(ctx, r.Store.Dir, r.say)
	}
	if err != nil && ctx.Err() == nil {
		return trials, err
	}
	cleaned := false // interrupted: the loop below stops at once and the labs are stopped
	defer func() { rp.Release(cleaned) }()
	if pids := stopLeftoverRuns(ownProc, r.Store.Dir); len(pids) > 0 { // a tare killed without a reaper
		r.say("stopped %d processes an earlier tare left of this experiment's run commands (PIDs %v)", len(pids), pids)
	}
	for i := 0; i < len(trials); i++ { // a sequential experiment adds rounds after its pilot
		t := &trials[i]
		if t.Status == "ok" || t.Status == StatusStopped {
			continue
		}
		if ctx.Err() != nil {
			runErr = ctx.Err()
			break
		}
		// One trial, or (concurrent) every trial of its round at once.
		end := i + 1
		if spec.concurrent() {
			// A round partly saved (a failed save) is measured again whole: its trials pair in one window.
			for i > 0 && trials[i-1].Round == t.Round {
				i--
			}
			t = &trials[i]
			end = roundEnd(trials, i)
		}
		var ts []*Trial
		for k := i; k < end; k++ {
			trials[k] = Trial{Seq: trials[k].Seq, Round: trials[k].Round, Variant: trials[k].Variant, Started: time.Now(), Status: "ok"}
			ts = append(ts, &trials[k])
		}
		total := len(trials)
		var err error
		if spec.concurrent() {
			r.say("round %d: %s at once on %d labs (trials %d-%d of %d)%s", t.Round, strings.Join(spec.design().Variants, ", "), len(r.labDirs()),
				ts[0].Seq, ts[len(ts)-1].Seq, total, eta(time.Since(began), ran, pendingFrom(trials, i)))
			r.Live.Start(fmt.Sprintf("round %d: starting", t.Round), 0)
			err = r.round(ctx, ts)
		} else {
			r.say("trial %d/%d: %s (round %d)%s", t.Seq, total, t.Variant, t.Round, eta(time.Since(began), ran, pendingFrom(trials, i)))
			r.Live.Start(fmt.Sprintf("trial %d/%d %s: starting", t.Seq, total, t.Variant), 0)
			err = r.trial(ctx, t, spec.variant(t.Variant))
		}
		ran += len(ts)
		if ctx.Err() != nil {
			// Interrupted: the trials are not measurements; they are run again on --resume.
			for _, x := range ts {
				*x = Trial{Seq: x.Seq, Round: x.Round, Variant: x.Variant, Status: "planned"}
			}
			runErr = ctx.Err()
			break
		}
		for _, x := range ts {
			if err != nil {
				x.Status, x.Error = "failed", err.Error()
			}
			if serr := r.Store.Save(context.WithoutCancel(ctx), *x); serr != nil {
				runErr = fmt.Errorf("saving trial %d: %w", x.Seq, serr)
				break
			}
		}
		if runErr != nil {
			break
		}
		if err != nil {
			what := fmt.Sprintf("trial %d (%s)", t.Seq, t.Variant)
			if spec.concurrent() {
				what = fmt.Sprintf("round %d", t.Round)
			}
			runErr = fmt.Errorf("%s: %w", what, err)
			if errors.Is(err, ErrStart) {
				break
			}
			r.say("  failed: %v", err) // a failed guard or window is recorded and the experiment goes on
		} else {
			for _, x := range ts {
				if len(ts) > 1 {
					r.say("  %s: %s", x.Variant, trialLine(*x, spec))
				} else {
					r.say("  %s", trialLine(*x, spec))
				}
			}
		}
		i = end - 1
		var stop bool
		if trials, stop, runErr = r.sequentialStep(ctx, trials, i); stop {
			break
		}
	}
	if lt := spec.Target.Lab; lt != nil {
		// Each trial stops its lab keeping the directory (a warm start for the next trial, or on --resume).
		// A finished experiment removes it, once nothing of the lab is left on the machine.
		for _, dir := range r.labDirs() {
			if _, err := lab.Down(context.WithoutCancel(ctx), dir, true); err != nil && !errors.Is(err, lab.ErrNotRunning) && runErr == nil {
				runErr = fmt.Errorf("stopping the experiment's lab %s: %w", dir, err)
			}
			if runErr == nil {
				if left := lab.Leftovers(dir, !lt.ControlPlaneOnly); len(left) == 0 {
					_ = os.RemoveAll(dir)
				}
			}
		}
	}
	cleaned = true
	return trials, runErr
}

// eta is the time spent and the time left, estimated from the trials run so far in this run.
func eta(spent time.Duration, ran, left int) string {
	if ran == 0 {
		return ""
	}
	per := spent / time.Duration(ran)
	return fmt.Sprintf(" · %s spent, about %s left", spent.Round(time.Second), (per * time.Duration(left)).Round(time.Second))
}

// pendingFrom counts the trials from i on that are not done.
func pendingFrom(trials []Trial, i int) int {
	n := 0
	for _, t := range trials[i:] {
		if t.Status != "ok" && t.Status != StatusStopped {
			n++
		}
	}
	return n
}

func (s *Spec) variant(name string) Variant {
	for _, v := range s.Variants {
		if v.Name == name {
			return v
		}
	}
	return Variant{Name: name}
}

func trialLine(t Trial, spec *Spec) string {
	var parts []string
	for _, g := range []string{GuardReady, GuardLatency} {
		if v, ok := t.Guard[g]; ok {
			parts = append(parts, fmt.Sprintf("%s %.3g%s", g, v, compare.Unit(g)))
		}
	}
	for _, m := range compare.Order(keys(t.Metrics), spec.Primary)[:min(3, len(t.Metrics))] {
		parts = append(parts, fmt.Sprintf("%s %.1f%s", m, t.Metrics[m], compare.Unit(m)))
	}
	return strings.Join(parts, ", ")
}

func keys(m map[string]float64) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// trial brings up the variant, measures the guard, waits out the warm-up and measures the window.
func (r *Runner) trial(ctx context.Context, t *Trial, v Variant) (err error) {
	spec := r.Store.Spec
	start := time.Now()
	var kubeconfig string
	var replicas []string // every lab's kubeconfig (the lab target)
	if lt := spec.Target.Lab; lt != nil {
		sets, err := labSets(lt, v)
		if err != nil {
			return err
		}
		sts, stop, since, err := r.labFor(ctx, lt, sets)
		if err != nil {
			return err
		}
		// The trial starts with its lab (its up, or its components' restart): the one start of labs that
		// serve every trial is not any trial's, nor counted in a sequential experiment's rounds and budget.
		start, t.Started = since, since
		if stop {
			defer func() { _, _ = lab.Down(context.WithoutCancel(ctx), r.LabDir(), true) }()
		}
		for _, st := range sts {
			replicas = append(replicas, st.Kubeconfig)
		}
		kubeconfig = replicas[0] // the guard's and the request rate's
	} else {
		c := spec.Target.Commands
		if err := shell(ctx, c.Apply, v, spec); err != nil {
			return fmt.Errorf("%w: apply: %w", ErrStart, err)
		}
		if c.Wait != "" {
			if err := shell(ctx, c.Wait, v, spec); err != nil {
				return fmt.Errorf("%w: wait: %w", ErrStart, err)
			}
		}
		kubeconfig = c.Kubeconfig // "" finds it as kubectl does: $KUBECONFIG, then ~/.kube/config
	}
	// Client-go's default rate limit (5 a second, bursts of 10) would turn the latency probe's 20 GETs into a
	// measurement of the limiter.
	kc, err := kube.NewClient(kubeconfig, kube.Options{UserAgent: "tare-experiment", Timeout: 30 * time.Second, QPS: 1000, Burst: 1000})
	if err != nil {
		return err
	}
	cs, err := kc.Clientset()
	if err != nil {
		return err
	}
	// Every lab's cluster (the commands target: the kubeconfig's), for its scale and its API request rate.
	kcs := replicas
	if len(kcs) == 0 {
		kcs = []string{kubeconfig}
	}
	cls, err := connectAll(kcs)
	if err != nil {
		return err
	}
	if err := scale(ctx, cs, v.Scale); err != nil {
		return err
	}
	for k, cl := range cls[1:] { // every other replica too
		if err := scale(ctx, cl.Clientset(), v.Scale); err != nil {
			return fmt.Errorf("lab %d of %d: %w", k+2, len(cls), err)
		}
	}
	t.Guard = map[string]float64{}
	if spec.guardDeployment() {
		defer func() { _ = removeGuard(context.WithoutCancel(ctx), cs) }()
		if err := reachable(ctx, cs, spec.Guard.image()); err != nil {
			return err
		}
		t.Guard[GuardReady] = time.Since(start).Seconds()
	}
	if spec.Guard.apiLatency() {
		ms, err := apiLatency(ctx, cs)
		if err != nil {
			return err
		}
		t.Guard[GuardLatency] = ms
	}
	ds, err := r.installDaemonSets(ctx, kc.Config, cs, v)
	if err != nil {
		return err
	}
	defer ds.removeAfter(ctx, &err, r.say)
	if v.Run != "" {
		// One run command a lab, with that lab's kubeconfig (the commands target: one, in tare's environment).
		kcs := replicas
		if len(kcs) == 0 {
			kcs = []string{""}
		}
		runs := make([]runAt, len(kcs))
		for k, kc := range kcs {
			log := fmt.Sprintf("trial-%03d-run.log", t.Seq)
			if len(kcs) > 1 {
				log = fmt.Sprintf("trial-%03d-run-%d.log", t.Seq, k+1)
			}
			runs[k] = runAt{v: v, logPath: filepath.Join(r.Store.Dir, log), kubeconfig: kc, replica: k + 1}
		}
		_, stop, err := startRuns(ctx, r.Store.Dir, runs)
		if err != nil {
			return err
		}
		defer stop()
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(spec.Warmup.Duration):
	}
	return r.window(ctx, t, cs, cls, ds)
}

// sharedSettle is how long a lab runs after its start before the first trial's guard, when it serves more
// than one trial (shared, or retuned). Up returns once a probe pod ran; measured here (exact task CPU in
// 10 s steps from Up's return), the control plane's CPU after that is within its usual minute-to-minute
// spread from the first step on, so a short settle covers the probe's clean-up. The spec's
// target.lab.settle changes it.
const sharedSettle = 20 * time.Second

// labFor brings up the labs a trial runs on (one, or the target's replicas), says whether the trial's end
// stops it and when the guard's ready-seconds start (the lab's start, the restart of the varied
// components, or now on a shared lab). One lab serves the whole experiment when the variants share it
// (Spec.SharedLab: started once and settled) or when every component the variants vary in can be
// restarted alone (lab.Lab.Retune: every lab component but kwok, etcd with its data kept; about 0.3-3.7 s
// against the 4-6 s of a one-node up): then each trial, the first one too, restarts exactly those
// components with its variant's flags, so that every trial is as fresh as every other and none pays for a
// whole restart. Otherwise every trial starts its own lab (a warm start from the kept directory) and
// stops it at its end (one lab only: Spec.checkReplicas). Replicas are all switched to the variant
// together, their retunes in parallel.
func (r *Runner) labFor(ctx context.Context, lt *LabTarget, sets []lab.Tuning) (_ []*lab.State, stop bool, since time.Time, _ error) {
	spec := r.Store.Spec
	varied := spec.variedComponents()
	shared, retune := spec.SharedLab(), lab.CanRetune(varied)
	up := r.upOptions(lt, sets, lt.ControlPlaneOnly)
	if !shared && !retune {
		start := time.Now()
		st, err := lab.Up(ctx, up)
		if err != nil {
			return nil, false, time.Time{}, fmt.Errorf("%w: %w", ErrStart, err)
		}
		r.say("  lab up in %.1f s", time.Since(start).Seconds())
		return []*lab.State{st}, true, start, nil
	}
	dirs := r.labDirs()
	sts, err := r.ensureLabs(ctx, up, dirs)
	if err != nil {
		return nil, false, time.Time{}, err
	}
	if shared {
		return sts, false, time.Now(), nil
	}
	perLab := make([][]lab.Tuning, len(dirs))
	for k := range perLab {
		perLab[k] = sets
	}
	since = time.Now()
	if sts, err = r.retuneAll(ctx, dirs, perLab, varied); err != nil {
		return nil, false, time.Time{}, err
	}
	return sts, false, since, nil
}

// upOptions are how the experiment starts its labs (from the first one's directory, LabDir). The labs are
// the experiment's: their components end with it even when it is killed (SIGKILL, the OOM killer), so
// that a control-plane-only lab leaves nothing holding memory and ports (a lab with a node keeps its pods
// and network until --resume or tare lab down); --resume starts them again.
func (r *Runner) upOptions(lt *LabTarget, sets []lab.Tuning, controlPlaneOnly bool) lab.UpOptions {
	return lab.UpOptions{Dir: r.LabDir(), Profile: lt.Profile, Sets: sets, ControlPlaneOnly: controlPlaneOnly, BinDir: lt.BinDir,
		StopWithCaller: true}
}

// ensureLabs returns the running labs in dirs, or, when they are not running (the first trial, a resume)
// or not whole, starts them afresh (upReplicas) and lets them settle.
func (r *Runner) ensureLabs(ctx context.Context, up lab.UpOptions, dirs []string) ([]*lab.State, error) {
	if sts, err := r.running(dirs); err == nil {
		return sts, nil
	}
	start := time.Now()
	sts, err := r.upReplicas(ctx, up, dirs)
	if err != nil {
		return nil, err
	}
	spec := r.Store.Spec
	how := "every variant (they differ in nothing the lab runs)"
	if !spec.SharedLab() {
		how = "every trial; each restarts only " + strings.Join(spec.variedComponents(), ", ")
	}
	if spec.concurrent() {
		how = fmt.Sprintf("every round, each of the %d variants on %d of them at once, dealt at random", len(spec.Variants), len(dirs)/len(spec.Variants))
	}
	settle := spec.Target.Lab.settle()
	if len(dirs) == 1 {
		r.say("  lab up in %.1f s; it serves %s; settling it for %s", time.Since(start).Seconds(), how, settle)
	} else {
		r.say("  %d labs up in %.0f s; they serve %s; settling them for %s", len(dirs), time.Since(start).Seconds(), how, settle)
	}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(settle):
	}
	return sts, nil
}

// retuneAll restarts the varied components of every lab in dirs at once, lab k with sets[k], and returns
// the labs' states once each runs whole again.
func (r *Runner) retuneAll(ctx context.Context, dirs []string, sets [][]lab.Tuning, varied []string) ([]*lab.State, error) {
	since := time.Now()
	reps := make([]*lab.RetuneReport, len(dirs))
	errs := make([]error, len(dirs))
	var wg sync.WaitGroup
	for k, dir := range dirs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l, err := lab.Open(dir)
			if err == nil {
				reps[k], err = l.Retune(ctx, sets[k], varied)
			}
			if errs[k] = err; err != nil && len(dirs) > 1 {
				errs[k] = fmt.Errorf("lab %s: %w", dir, errs[k])
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrStart, err)
	}
	on := ""
	if len(dirs) > 1 {
		on = fmt.Sprintf(" on %d labs", len(dirs))
	}
	r.say("  %s restarted%s in %.1f s", strings.Join(reps[0].Restarted, " and "), on, time.Since(since).Seconds())
	sts, err := r.running(dirs)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrStart, err)
	}
	return sts, nil
}

// running loads the state of every lab in dirs, and fails unless each one runs whole.
func (r *Runner) running(dirs []string) ([]*lab.State, error) {
	var sts []*lab.State
	for _, dir := range dirs {
		l, err := lab.Open(dir)
		if err != nil {
			return nil, err
		}
		if err := l.State.Whole(dir); err != nil {
			return nil, err
		}
		sts = append(sts, l.State)
	}
	return sts, nil
}

// upReplicas stops whatever is left of the labs in dirs and starts them afresh: one lab at once, with
// their ports replicaPortStep apart, their starts spread evenly over replicaStagger (a concurrent
// experiment's labs a few at once, no stagger: upTogether).
func (r *Runner) upReplicas(ctx context.Context, up lab.UpOptions, dirs []string) ([]*lab.State, error) {
	for _, dir := range dirs {
		_, _ = lab.Down(context.WithoutCancel(ctx), dir, true)
	}
	if err := checkMemory(r.Roots.ProcRoot, len(dirs)); err != nil {
		return nil, err
	}
	// A concurrent experiment's shares are measured at the same moment, so a burst in step across its
	// labs hits every share alike and cancels in their difference (12 labs probed here: the difference
	// of 20 s windows as steady in step as spread): its labs start without a stagger, a few at once.
	if r.Store.Spec.concurrent() {
		return r.upTogether(ctx, up, dirs)
	}
	stagger := replicaStagger
	begin := time.Now()
	var sts []*lab.State
	for k, dir := range dirs {
		at := begin.Add(time.Duration(k) * stagger / time.Duration(len(dirs)))
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Until(at)):
		}
		up.Dir, up.PortOffset = dir, k*replicaPortStep
		start := time.Now()
		st, err := lab.Up(ctx, up)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrStart, err)
		}
		if len(dirs) > 1 {
			r.say("  lab %d/%d up in %.1f s (its ports +%d)", k+1, len(dirs), time.Since(start).Seconds(), up.PortOffset)
		}
		sts = append(sts, st)
	}
	return sts, nil
}

// labsAtOnce is how many labs a concurrent experiment starts at a time: a lab's start waits on its
// components' health more than it works, so a few in parallel take about as long as one.
const labsAtOnce = 4

// upTogether starts the labs in dirs (already stopped), labsAtOnce at a time, with their ports
// replicaPortStep apart.
func (r *Runner) upTogether(ctx context.Context, up lab.UpOptions, dirs []string) ([]*lab.State, error) {
	sts := make([]*lab.State, len(dirs))
	errs := make([]error, len(dirs))
	slots := make(chan struct{}, labsAtOnce)
	var wg sync.WaitGroup
	var mu sync.Mutex // the progress writer is one
	for k, dir := range dirs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case <-ctx.Done():
				errs[k] = ctx.Err()
				return
			case slots <- struct{}{}:
			}
			defer func() { <-slots }()
			o := up
			o.Dir, o.PortOffset = dir, k*replicaPortStep
			start := time.Now()
			if sts[k], errs[k] = lab.Up(ctx, o); errs[k] != nil {
				errs[k] = fmt.Errorf("lab %d/%d: %w", k+1, len(dirs), errs[k])
				return
			}
			mu.Lock()
			defer mu.Unlock()
			r.say("  lab %d/%d up in %.1f s (its ports +%d)", k+1, len(dirs), time.Since(start).Seconds(), o.PortOffset)
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrStart, err)
	}
	return sts, nil
}

// window measures the node for the spec's window, recording it, and reads the API server's request rate
// over the same span. The trial keeps the window's warnings, which are also printed as they arise.
func (r *Runner) window(ctx context.Context, t *Trial, _ kubernetes.Interface, cls []*kube.Cluster, ds *daemonSets) error {
	res, rates, err := r.record(ctx, t, cls, r.Store.Spec.variant(t.Variant).Pause)
	if err != nil {
		return err
	}
	all := make([]int, len(cls))
	for k := range all {
		all[k] = k
	}
	sum := summary.Build(res.Meta, res.Samples, summary.Options{})
	t.Metrics = compare.Measure(sum, rates.perMinute(all), r.Store.Spec.Metrics)
	if _, ok := t.Metrics[compare.APIRequests]; ok {
		if w := rates.watches(all); w >= 0 {
			t.Metrics[compare.APIWatches] = w
		}
	}
	return ds.cost(ctx, sum, t.Metrics)
}

// record measures the node for the spec's window into t's recording (pausing the lab for it when asked)
// and reads every cluster's API request totals before and after. t keeps the window's warnings.
func (r *Runner) record(ctx context.Context, t *Trial, cls []*kube.Cluster, pause bool) (session.Result, requestRates, error) {
	spec := r.Store.Spec
	before, berr := scrapeAll(ctx, cls)
	var l *lab.Lab
	if pause {
		var err error
		if l, err = lab.Open(r.LabDir()); err == nil {
			_, err = l.Pause(ctx, lab.PauseOptions{})
		}
		if err != nil {
			return session.Result{}, requestRates{}, err
		}
		r.say("  lab paused for the window")
	}
	t.Recording = filepath.Join(r.Store.Dir, fmt.Sprintf("trial-%03d.db", t.Seq))
	_ = os.Remove(t.Recording) // a trial interrupted before is measured again
	defer r.Live.Start(fmt.Sprintf("trial %d %s: stopping", t.Seq, t.Variant), 0)
	res, err := session.Measure(ctx, session.Options{
		Sampler: sample.Options{ProcRoot: r.Roots.ProcRoot, SysRoot: r.Roots.SysRoot, HostRoot: r.Roots.HostRoot, CgroupRoot: r.Roots.CgroupRoot,
			Interval: spec.Interval.Duration, Detail: 5 * time.Second},
		Duration:  spec.Window.Duration,
		Version:   r.Version,
		OnWarning: func(w session.Warning) { r.say("  warning: %s", w) },
	}, session.Recorder(t.Recording), session.Progress(r.Live, fmt.Sprintf("trial %d %s: window", t.Seq, t.Variant)))
	t.Warnings = res.Warnings
	if pause {
		// Thawed before anything asks the API again: the request rate and the guard's clean-up need it.
		if _, uerr := l.Unpause(context.WithoutCancel(ctx)); uerr != nil && err == nil {
			err = uerr
		}
	}
	if err != nil {
		return res, requestRates{}, err
	}
	after, aerr := scrapeAll(context.WithoutCancel(ctx), cls)
	if ctx.Err() != nil {
		return res, requestRates{}, ctx.Err()
	}
	if res.SinkErr != nil {
		return res, requestRates{}, fmt.Errorf("recording the window: %w", res.SinkErr)
	}
	if len(res.Samples) < 2 {
		return res, requestRates{}, fmt.Errorf("the window has %d sample(s)", len(res.Samples))
	}
	rates := requestRates{ok: berr == nil && aerr == nil, before: before, after: after,
		minutes: res.Samples[len(res.Samples)-1].Time.Sub(res.Samples[0].Time).Minutes()}
	return res, rates, nil
}

// requestRates are the clusters' API request totals (and open watches) before and after a window.
type requestRates struct {
	ok            bool
	before, after []audit.APIServerMetrics
	minutes       float64
}

// watches are the watches open at the window's end summed over the clusters at the indexes labs; -1 when
// a scrape failed or an API server has no such gauge.
func (q requestRates) watches(labs []int) float64 {
	if !q.ok {
		return -1
	}
	n := 0.0
	for _, k := range labs {
		if q.after[k].Watches < 0 {
			return -1
		}
		n += q.after[k].Watches
	}
	return n
}

// perMinute is the request rate summed over the clusters at the indexes labs; -1 when a scrape failed.
func (q requestRates) perMinute(labs []int) float64 {
	if !q.ok {
		return -1
	}
	perMin := 0.0
	for _, k := range labs {
		perMin += audit.Delta(q.before[k].Requests, q.after[k].Requests, q.minutes).PerMinute
	}
	return perMin
}

// connectAll connects to every cluster in kubeconfigs, in order.
func connectAll(kubeconfigs []string) ([]*kube.Cluster, error) {
	cls := make([]*kube.Cluster, len(kubeconfigs))
	for k, kc := range kubeconfigs {
		c, err := kube.NewClient(kc, kube.Options{})
		if err != nil {
			return nil, err
		}
		cl, err := c.Cluster()
		if err != nil {
			return nil, err
		}
		cls[k] = cl
	}
	return cls, nil
}

// scrapeAll reads the API request totals and open watches of every cluster, in order.
func scrapeAll(ctx context.Context, cls []*kube.Cluster) ([]audit.APIServerMetrics, error) {
	// At once: the totals are read as close to the window's ends as they can be, and 16 API servers'
	// metrics one after another took seconds of every round.
	out := make([]audit.APIServerMetrics, len(cls))
	errs := make([]error, len(cls))
	var wg sync.WaitGroup
	for k, cl := range cls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[k], errs[k] = scrape(ctx, cl)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

func scrape(ctx context.Context, cl *kube.Cluster) (audit.APIServerMetrics, error) {
	body, err := cl.Metrics(ctx)
	if err != nil {
		return audit.APIServerMetrics{}, err
	}
	defer body.Close()
	return audit.ParseAPIServerMetrics(body)
}

// labSets are the target's and the variant's flags, in that order (the variant wins).
func labSets(lt *LabTarget, v Variant) ([]lab.Tuning, error) {
	var sets []lab.Tuning
	for _, x := range lt.Set {
		t, err := lab.ParseSet(x)
		if err != nil {
			return nil, err
		}
		sets = append(sets, t)
	}
	ts, err := v.tunings()
	if err != nil {
		return nil, err
	}
	return append(sets, ts...), nil
}

// shell runs a target command with the variant in its environment.
func shell(ctx context.Context, command string, v Variant, spec *Spec) error {
	cmd := exec.CommandContext(ctx, "sh", "-c", command)
	value := ""
	if spec.Sweep != nil {
		value = v.Name
	}
	cmd.Env = append(os.Environ(), "TARE_VARIANT="+v.Name, "TARE_VALUE="+value, "TARE_SET="+strings.Join(v.Set, " "))
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%q: %w: %s", command, err, tail(strings.TrimSpace(string(out))))
	}
	return nil
}
