package cli

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/spf13/cobra"

	"github.com/tare-dev/tare/internal/kube"
	"github.com/tare-dev/tare/internal/lab"
	"github.com/tare-dev/tare/internal/progress"
	"github.com/tare-dev/tare/internal/sample"
	"github.com/tare-dev/tare/internal/session"
	"github.com/tare-dev/tare/internal/summary"
)

type measureOptions struct {
	duration     time.Duration
	interval     time.Duration
	detail       time.Duration
	match        string
	record       string
	html         string
	top          int
	unprivileged bool
	blockIO      bool
	exactMemory  bool
}

func newMeasure(s streams, g *globalOptions) *cobra.Command {
	o := &measureOptions{}
	cmd := &cobra.Command{
		Use:   "measure",
		Short: "Sample the node and print where its CPU, memory and disk go",
		Long: `Sample the node over a window and print:
  - node CPU in millicores and % of all cores, split into user, nice, system, irq, softirq and steal,
    with iowait and idle apart, load average and pressure (PSI);
  - CPU (mean, p95, max), memory (RSS, PSS, private), disk bytes/s and threads per group
    (Kubernetes component, pod, kernel threads, other) and per process;
  - short-lived processes, credited with their command line to the process that spawned them;
  - tare's own cost, apart from every group;
  - a reconciliation: groups + tare + unattributed = node busy, with the counter resolution.

` + summary.BusyDefinition + `.

Per-process CPU comes from nanosecond counters: taskstats (as root) or per-thread schedstat. Without root
tare measures what it can and lists what it could not read and why.` + figuresHelp,
		Example: `  # One minute, one sample per second (the default)
  sudo tare measure

  # Ten seconds at 10 Hz, only kube-* processes, JSON
  sudo tare measure --duration 10s --interval 100ms --match 'kube-' -o json

  # Keep every sample in a SQLite file, then summarise it again later
  sudo tare measure --duration 5m --record node.db
  tare report node.db`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runMeasure(cmd.Context(), s, g, o)
		},
	}
	f := cmd.Flags()
	f.DurationVar(&o.duration, "duration", time.Minute, "how long to measure")
	f.DurationVar(&o.interval, "interval", time.Second, "time between samples (CPU series resolution)")
	f.DurationVar(&o.detail, "detail-interval", 5*time.Second, "time between memory, disk and thread reads (rounded to a multiple of --interval)")
	f.StringVar(&o.match, "match", "", "show only processes whose command line, name or group matches this regular expression")
	f.StringVar(&o.record, "record", "", "write every sample to this SQLite file (must not exist)")
	f.IntVar(&o.top, "top", 20, "processes and children rows shown in the table")
	htmlFlag(f, &o.html)
	f.BoolVar(&o.unprivileged, "unprivileged", false, "use only sources that work without root (schedstat, cutime), even as root")
	f.BoolVar(&o.exactMemory, "exact-memory", false, "read every process's smaps_rollup at the first sample, idle ones included, instead of one idle process of each kind whose memory the others of its kind follow (costlier start with thousands of processes)")
	f.BoolVar(&o.blockIO, "block-io", false, "count every process's block I/O requests and their device and queue time with BPF (about 25 ms of CPU to load)")
	return cmd
}

func (o *measureOptions) validate() (*regexp.Regexp, error) {
	switch {
	case o.duration <= 0:
		return nil, usageError("--duration must be positive, got %s", o.duration)
	case sample.CheckInterval(o.interval) != nil:
		return nil, usageError("%w", sample.CheckInterval(o.interval))
	case o.interval > o.duration:
		return nil, usageError("--interval %s is longer than --duration %s: no interval would complete", o.interval, o.duration)
	case o.detail <= 0:
		return nil, usageError("--detail-interval must be positive, got %s (it is rounded up to a multiple of --interval)", o.detail)
	}
	o.detail = max(o.detail, o.interval)
	if err := checkTop(o.top); err != nil {
		return nil, err
	}
	if err := checkHTML(o.html); err != nil {
		return nil, err
	}
	if o.match == "" {
		return nil, nil
	}
	re, err := regexp.Compile(o.match)
	if err != nil {
		return nil, usageError("--match: %w", err)
	}
	return re, nil
}

func runMeasure(ctx context.Context, s streams, g *globalOptions, o *measureOptions) error {
	match, err := o.validate()
	if err != nil {
		return err
	}
	live := liveLine(s, g)
	names, nameNote := podNamer(ctx, g.cluster(s, lab.DefaultDir()), sample.HostName(g.procRoot))
	so := o.sessionOptions(g, names, warner(s, live))
	if nameNote != "" {
		so.Limitations = append(so.Limitations, nameNote)
	}
	var sinks []session.Sink
	if o.record != "" {
		sinks = append(sinks, session.Recorder(o.record))
	}
	res, err := session.Measure(ctx, so, append(sinks, session.Progress(live, "measuring"))...)
	if err != nil {
		return err
	}
	sum := summary.Build(res.Meta, res.Samples, summary.Options{Match: match, Top: o.top, BlockIO: res.BlockIO})
	if err := render(s, g, sum); err != nil {
		return err
	}
	if err := nodeHTML(s, o.html, "tare measure", res.Samples, sum); err != nil {
		return err
	}
	if res.SinkErr != nil {
		return fmt.Errorf("the summary above is complete, but the recording is not: %w", res.SinkErr)
	}
	if len(res.Samples) < 2 {
		return errors.New("measurement stopped before the first interval completed: nothing was measured")
	}
	return nil
}

// sessionOptions configure the measuring session the flags ask for (measure's and explain's); warn prints
// each warning as it arises.
func (o *measureOptions) sessionOptions(g *globalOptions, names func(uid, ctr string) (string, string, string, bool), warn func(string)) session.Options {
	return session.Options{
		Sampler: g.sampleOptions(sample.Options{Interval: o.interval, Detail: o.detail,
			Unprivileged: o.unprivileged, PodNames: names, ExactBaseline: o.exactMemory}),
		Duration:  o.duration,
		Version:   Version,
		OnWarning: func(w session.Warning) { warn(w.Message) },
		BlockIO:   o.blockIO,
	}
}

// liveLine is the status line of a long verb: only when stdout and stderr are terminals and the output is
// not JSON (nil otherwise, which draws nothing).
func liveLine(s streams, g *globalOptions) *progress.Line {
	if g.output == "json" || !progress.Terminal(s.out, s.err) {
		return nil
	}
	return progress.New(s.err)
}

// warner prints warnings on stderr, above the status line when there is one.
func warner(s streams, live *progress.Line) func(string) {
	return func(msg string) {
		if live != nil {
			live.Printf("warning: %s", msg)
			return
		}
		fmt.Fprintf(s.err, "warning: %s\n", msg)
	}
}

// podNamer connects to the API when a kubeconfig is given or found, so pods are named namespace/name.
// Without one, or when the API does not answer, pods keep their UID and the note says why.
func podNamer(ctx context.Context, t kubeTarget, node string) (func(uid, ctr string) (string, string, string, bool), string) {
	n, err := kube.NewPodNamer(ctx, t.kubeconfig, t.context, node)
	switch {
	case errors.Is(err, kube.ErrNoKubeconfig):
		return nil, ""
	case err != nil:
		return nil, "pod names: " + err.Error() + "; pods are shown by UID"
	}
	return func(uid, ctr string) (string, string, string, bool) {
		ref, ok := n.Name(uid, ctr)
		return ref.Namespace, ref.Name, ref.Container, ok
	}, ""
}
