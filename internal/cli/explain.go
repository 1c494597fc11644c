package cli

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tare-dev/tare/internal/explain/collect"
	"github.com/tare-dev/tare/internal/htmlreport"
	"github.com/tare-dev/tare/internal/progress"
	"github.com/tare-dev/tare/internal/sample"
	"github.com/tare-dev/tare/internal/session"
	"github.com/tare-dev/tare/internal/summary"
)

type explainOptions struct {
	measureOptions
	audit    string
	pprof    []string
	pprofURL []string
	flameDir string
	labDir   string
}

func newExplain(s streams, g *globalOptions) *cobra.Command {
	o := &explainOptions{}
	cmd := &cobra.Command{
		Use:   "explain [RECORDING]",
		Short: "Say where the node's overhead comes from, with evidence and a change for each cause",
		Long: `Measure the node (or read a recording made with tare measure --record) and explain its CPU:

  - spikes above a robust baseline (median + 4 MAD), their period, and the groups and short-lived
    commands behind each; pollers (a process starting the same command on a timer) with their
    interval, command line and share; the sawtooth of CPUs idling between bursts of work;
  - API clients from the kube-apiserver audit log (streamed, any size): requests per minute by client
    (user agent, version stripped), verb, resource and namespace; leader-election renewals; hot
    list/watch calls. Without an audit log, kube-apiserver's request counters, and how to enable one;
  - CPU profiles of the Go components over the window (the lab's seven, or kube-apiserver and the
    kubelet through the API server, or any --pprof-url): the top functions of each, and its flame
    graph in the HTML report; SVG files only when asked (--flames DIR, or next to --html);
  - the USE view: utilisation, saturation and errors of CPU, memory, each disk and network interface,
    with a verdict, and which groups write to disk;
  - findings, ranked by estimated CPU: leader election with one replica, extra CoreDNS replicas on one
    node, pollers, chatty clients, kubelet housekeeping, the sawtooth; each with its evidence, the change
    to make, how sure tare is and how to verify the change.

When a lab is running (tare lab up) and no other kubeconfig is given, explain uses the lab: its
kubeconfig, its audit log (tare lab up --audit) and its components' pprof endpoints. Explaining a
recording reads the cluster's nodes, leases and replicas as they are now, and says so.` + figuresHelp,
		Example: `  # One minute of the lab, with its audit log and profiles; flame graphs in the HTML report and as
  # SVG files in explain-flames/
  sudo tare lab up --profile upstream --audit
  sudo tare explain --html explain.html

  # Any cluster: its kubeconfig, an audit log copied from the control plane
  sudo tare explain --kubeconfig ~/.kube/config --audit /var/log/kubernetes/audit.log

  # A recording, later
  sudo tare measure --duration 5m --record node.db
  tare explain node.db -o json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runExplain(cmd.Context(), s, g, o, args)
		},
	}
	f := cmd.Flags()
	f.DurationVar(&o.duration, "duration", time.Minute, "how long to measure (and profile)")
	f.DurationVar(&o.interval, "interval", time.Second, "time between samples: spikes and periods are found at this resolution (down to 100ms)")
	f.DurationVar(&o.detail, "detail-interval", 5*time.Second, "time between memory, disk and thread reads")
	f.IntVar(&o.top, "top", 20, "rows in the process tables behind the analysis")
	f.StringVar(&o.audit, "audit", "", "kube-apiserver audit log (JSON lines) to read; default: the lab's, if it has one; none: skip")
	f.StringSliceVar(&o.pprof, "pprof", []string{"auto"}, "components to CPU-profile over the window: auto (every reachable one), none, or names such as kube-apiserver,etcd")
	f.StringArrayVar(&o.pprofURL, "pprof-url", nil, "profile another Go program: NAME=URL, where URL/debug/pprof/profile answers (repeatable)")
	f.StringVar(&o.flameDir, "flames", "", "write a flame graph of each profile (COMPONENT.svg) into this directory; default: none, or NAME-flames/ next to --html NAME.html")
	labDirFlag(f, &o.labDir, "lab-dir", "the lab to use when one is running")
	htmlFlag(f, &o.html)
	return cmd
}

func (o *explainOptions) validate() error {
	if o.interval < 100*time.Millisecond && o.interval > 0 {
		return usageError("--interval %s is below explain's 100ms floor (10 Hz)", o.interval)
	}
	if _, err := o.measureOptions.validate(); err != nil {
		return err
	}
	for _, u := range o.pprofURL {
		if _, err := collect.ParsePprofURL(u); err != nil {
			return usageError("%w", err)
		}
	}
	return nil
}

// flames is where the flame graphs go: --flames, else next to the HTML report (report.html gets
// report-flames/), else nowhere.
func (o *explainOptions) flames() string {
	if o.flameDir != "" || o.html == "" {
		return o.flameDir
	}
	return strings.TrimSuffix(o.html, filepath.Ext(o.html)) + "-flames"
}

func runExplain(ctx context.Context, s streams, g *globalOptions, o *explainOptions, args []string) error {
	if err := o.validate(); err != nil {
		return err
	}
	co := collect.Options{Kubeconfig: g.kubeconfig, Context: g.context, LabDir: o.labDir, Audit: o.audit, Pprof: o.pprof, PprofURL: o.pprofURL,
		FlameDir: o.flames(), Node: sample.HostName(g.procRoot), Duration: o.duration}
	what := "tare explain"
	if len(args) == 1 {
		co.Recording = args[0]
		what = "tare explain of recording " + args[0]
	}
	live := liveLine(s, g)
	defer live.Done()
	co.Progress = func(stage string) { live.Start(stage, 0) }
	src := collect.Discover(co)
	var measure collect.Measure
	var nameNote string
	if co.Recording == "" {
		kc, kctx := src.Kubeconfig()
		ses, note, err := o.openSession(ctx, s, g, kubeTarget{kubeconfig: kc, context: kctx}, co.Node, live)
		if err != nil {
			return err
		}
		defer ses.Close()
		label := "measuring"
		if len(src.Targets) > 0 {
			label = fmt.Sprintf("measuring and profiling %d component(s)", len(src.Targets))
		}
		measure = func(ctx context.Context) ([]sample.Sample, sample.Meta, error) {
			res, err := ses.Run(ctx, session.Progress(live, label))
			return res.Samples, res.Meta, err
		}
		nameNote = note
	}
	res, err := src.Collect(ctx, measure)
	if err != nil {
		return err
	}
	live.Done()
	rep := res.Report(summary.Build(res.Meta, res.Samples, summary.Options{Top: o.top}))
	if nameNote != "" {
		rep.Notes = append(rep.Notes, nameNote)
	}
	if err := render(s, g, rep); err != nil {
		return err
	}
	if o.html != "" {
		if err := writeHTML(s, o.html, htmlreport.Node(rep, what, Version)); err != nil {
			return err
		}
	}
	if len(res.Samples) < 2 {
		return errors.New("measurement stopped before the first interval completed: nothing to explain")
	}
	return nil
}

// openSession opens the measuring session of a live window, naming pods through the cluster explain found
// (t); the note says why pods are shown by UID when they are.
func (o *explainOptions) openSession(ctx context.Context, s streams, g *globalOptions, t kubeTarget, node string, live *progress.Line) (*session.Session, string, error) {
	names, note := podNamer(ctx, t, node)
	ses, err := session.Open(ctx, o.sessionOptions(g, names, warner(s, live)))
	return ses, note, err
}
