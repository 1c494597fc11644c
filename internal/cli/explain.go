package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/pprof/profile"
	"github.com/spf13/cobra"

	"github.com/tare-dev/tare/internal/audit"
	"github.com/tare-dev/tare/internal/explain"
	"github.com/tare-dev/tare/internal/htmlreport"
	"github.com/tare-dev/tare/internal/kube"
	"github.com/tare-dev/tare/internal/lab"
	"github.com/tare-dev/tare/internal/pprof"
	"github.com/tare-dev/tare/internal/record"
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
    kubelet through the API server, or any --pprof-url): top functions and a flame graph (SVG) each;
  - the USE view: utilisation, saturation and errors of CPU, memory, each disk and network interface,
    with a verdict, and which groups write to disk;
  - findings, ranked by estimated CPU: leader election with one replica, extra CoreDNS replicas on one
    node, pollers, chatty clients, kubelet housekeeping, the sawtooth; each with its evidence, the change
    to make, how sure tare is and how to verify the change.

When a lab is running (tare lab up) and no other kubeconfig is given, explain uses the lab: its
kubeconfig, its audit log (tare lab up --audit) and its components' pprof endpoints.`,
		Example: `  # One minute of the lab, with its audit log and profiles
  sudo tare lab up --profile upstream --audit
  sudo tare explain

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
	f.StringVar(&o.flameDir, "flame-dir", "tare-flames", "directory for the flame graphs (COMPONENT.svg); empty: do not write them")
	f.StringVar(&o.labDir, "lab-dir", lab.DefaultDir(), "the lab to use when one is running")
	htmlFlag(f, &o.html)
	return cmd
}

// explainContext is what explain found to work with: a cluster, a lab, an audit log, pprof targets.
type explainContext struct {
	cluster *kube.Cluster
	lab     *lab.State
	audit   string
	targets []pprof.Target
	notes   []string
	node    string // the measured host's name, as its kubelet's node
}

func (o *explainOptions) validate() error {
	if o.interval < 100*time.Millisecond && o.interval > 0 {
		return usageError("--interval %s is below explain's 100ms floor (10 Hz)", o.interval)
	}
	if _, err := o.measureOptions.validate(); err != nil {
		return err
	}
	for _, u := range o.pprofURL {
		name, url, ok := strings.Cut(u, "=")
		if !ok || name == "" || !strings.HasPrefix(url, "http://") && !strings.HasPrefix(url, "https://") {
			return usageError("--pprof-url %q: want NAME=http(s)://HOST:PORT", u)
		}
	}
	return nil
}

func runExplain(ctx context.Context, s streams, g *globalOptions, o *explainOptions, args []string) error {
	if err := g.validate(); err != nil {
		return err
	}
	if err := o.validate(); err != nil {
		return err
	}
	ec := o.discover(g)
	var samples []sample.Sample
	var meta sample.Meta
	var profiles []pprof.Summary
	var api explain.API
	if len(args) == 1 {
		rec, err := record.Read(ctx, args[0])
		if err != nil {
			return err
		}
		samples, meta = rec.Samples, rec.Meta
		if len(o.pprof) > 0 && o.pprof[0] != "auto" && o.pprof[0] != "none" || len(o.pprofURL) > 0 {
			ec.notes = append(ec.notes, "profiles are taken live: none for a recording")
		}
		if len(samples) > 0 {
			api = o.apiView(ctx, ec, nil, samples[0].Time, samples[len(samples)-1].Time)
		}
	} else {
		var err error
		if samples, meta, profiles, api, err = o.live(ctx, s, g, ec); err != nil {
			return err
		}
	}
	sum := summary.Build(meta, samples, summary.Options{Top: o.top})
	var facts *kube.Facts
	if ec.cluster != nil {
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
		f := ec.cluster.Facts(fctx)
		cancel()
		facts = &f
		for _, u := range f.Unreadable {
			ec.notes = append(ec.notes, "cluster: "+u)
		}
	}
	rep := explain.New(samples, sum, api, facts, profiles)
	rep.Notes = append(rep.Notes, ec.notes...)
	if err := render(s, g, rep); err != nil {
		return err
	}
	if o.html != "" {
		what := "tare explain"
		if len(args) == 1 {
			what = "tare explain of recording " + args[0]
		}
		if err := writeHTML(s, o.html, htmlreport.Node(rep, what, Version)); err != nil {
			return err
		}
	}
	if len(samples) < 2 {
		return errors.New("measurement stopped before the first interval completed: nothing to explain")
	}
	return nil
}

// discover finds the cluster, lab, audit log and pprof endpoints to use, noting what is missing.
func (o *explainOptions) discover(g *globalOptions) *explainContext {
	ec := &explainContext{audit: o.audit, node: sample.HostName(g.procRoot)}
	if st, err := lab.LoadState(o.labDir); err == nil && (g.kubeconfig == "" || sameFile(g.kubeconfig, st.Kubeconfig)) {
		ec.lab = st
	}
	kc := g.kubeconfig
	if kc == "" && ec.lab != nil {
		kc = ec.lab.Kubeconfig
	}
	if path, err := kube.ResolveKubeconfig(kc); err == nil {
		if c, err := kube.Connect(path); err == nil {
			ec.cluster = c
		} else {
			ec.notes = append(ec.notes, err.Error())
		}
	} else if !errors.Is(err, kube.ErrNoKubeconfig) {
		ec.notes = append(ec.notes, err.Error())
	} else {
		ec.notes = append(ec.notes, "no kubeconfig: the cluster rules, API metrics and profiles through the API server are skipped (give --kubeconfig)")
	}
	if ec.audit == "" && ec.lab != nil && ec.lab.Audit != "" {
		ec.audit = ec.lab.Audit
	}
	if ec.audit == "none" {
		ec.audit = ""
	}
	ec.targets = o.pprofTargets(ec)
	return ec
}

func sameFile(a, b string) bool {
	x, err1 := os.Stat(a)
	y, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(x, y)
}

// pprofTargets picks the endpoints to profile: the lab's, or the API server's and this node's kubelet
// through it, filtered by --pprof; plus every --pprof-url.
func (o *explainOptions) pprofTargets(ec *explainContext) []pprof.Target {
	var all []pprof.Target
	switch {
	case ec.lab != nil:
		ts, err := lab.PprofTargets(ec.lab.Dir)
		if err != nil {
			ec.notes = append(ec.notes, "lab pprof endpoints: "+err.Error())
		}
		all = ts
	case ec.cluster != nil:
		all = ec.cluster.PprofTargets(ec.node)
	}
	want := map[string]bool{}
	for _, c := range o.pprof {
		want[strings.TrimSpace(c)] = true
	}
	var out []pprof.Target
	if !want["none"] {
		for _, t := range all {
			if want["auto"] || want[t.Component] {
				out = append(out, t)
				delete(want, t.Component)
			}
		}
		delete(want, "auto")
		for c := range want {
			ec.notes = append(ec.notes, fmt.Sprintf("pprof: no endpoint known for %q (give --pprof-url %s=URL)", c, c))
		}
	}
	for _, u := range o.pprofURL {
		name, url, _ := strings.Cut(u, "=")
		out = append(out, pprof.Target{Component: name, Base: strings.TrimSuffix(strings.TrimSuffix(url, "/"), "/debug/pprof")})
	}
	return out
}

// live measures the node while profiling the components, then reads the API view for the same window.
func (o *explainOptions) live(ctx context.Context, s streams, g *globalOptions, ec *explainContext) ([]sample.Sample, sample.Meta, []pprof.Summary, explain.API, error) {
	live := liveLine(s, g)
	var before audit.RequestTotals
	if ec.audit == "" && ec.cluster != nil {
		before = scrapeTotals(ctx, ec)
	}
	kc := ""
	if ec.cluster != nil {
		kc = ec.cluster.Source
	}
	names, nameNote := podNamer(ctx, kc, sample.HostName(g.procRoot))
	ses, err := session.Open(ctx, o.sessionOptions(g, names, warner(s, live)))
	if err != nil {
		return nil, sample.Meta{}, nil, explain.API{}, err
	}
	defer ses.Close()
	if nameNote != "" {
		ec.notes = append(ec.notes, nameNote)
	}
	profiles, wait := o.profile(ctx, ec)
	label := "measuring"
	if len(ec.targets) > 0 {
		label = fmt.Sprintf("measuring and profiling %d component(s)", len(ec.targets))
	}
	res, err := ses.Run(ctx, session.Progress(live, label))
	if err != nil {
		return nil, sample.Meta{}, nil, explain.API{}, err
	}
	live.Start("waiting for the profiles", 0)
	wait()
	live.Done()
	samples := res.Samples
	api := o.apiView(ctx, ec, before, samples[0].Time, samples[len(samples)-1].Time)
	return samples, res.Meta, *profiles, api, nil
}

// profile starts one CPU profile per target for the window; wait blocks until all have returned and
// their flame graphs are written.
func (o *explainOptions) profile(ctx context.Context, ec *explainContext) (*[]pprof.Summary, func()) {
	out := &[]pprof.Summary{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	if o.flameDir != "" && len(ec.targets) > 0 {
		if err := os.MkdirAll(o.flameDir, 0o755); err != nil {
			ec.notes = append(ec.notes, fmt.Sprintf("flame graphs: %v", err))
			o.flameDir = ""
		}
	}
	for _, t := range ec.targets {
		wg.Go(func() {
			p, err := pprof.Fetch(ctx, t, o.duration)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				ec.notes = append(ec.notes, "profile: "+err.Error())
				return
			}
			sum := pprof.Summarize(t.Component, p, 15)
			sum.Frames = pprof.Frames(p)
			if o.flameDir != "" {
				path := filepath.Join(o.flameDir, t.Component+".svg")
				if err := writeFlame(path, t.Component, p); err != nil {
					ec.notes = append(ec.notes, fmt.Sprintf("flame graph of %s: %v", t.Component, err))
				} else {
					sum.Flame = path
				}
			}
			*out = append(*out, sum)
		})
	}
	return out, func() {
		wg.Wait()
		sort.Slice(*out, func(i, j int) bool { return (*out)[i].Mc > (*out)[j].Mc })
	}
}

func writeFlame(path, component string, p *profile.Profile) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.FlameSVG(f, component+" CPU", p); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func scrapeTotals(ctx context.Context, ec *explainContext) audit.RequestTotals {
	body, err := ec.cluster.Metrics(ctx)
	if err != nil {
		ec.notes = append(ec.notes, err.Error())
		return nil
	}
	defer body.Close()
	t, err := audit.ParseRequestTotals(body)
	if err != nil {
		ec.notes = append(ec.notes, err.Error())
	}
	return t
}

// apiView reads the audit log for the window, or, without one, the API server's request counters
// (before is the scrape at the start of a live window; nil for a recording, which has no such scrape).
func (o *explainOptions) apiView(ctx context.Context, ec *explainContext, before audit.RequestTotals, from, to time.Time) explain.API {
	actx := context.WithoutCancel(ctx)
	if ec.audit != "" {
		rep, err := audit.File(actx, ec.audit, audit.Options{From: from, To: to.Add(time.Second)})
		if err != nil {
			return explain.API{Missing: err.Error()}
		}
		return explain.API{Audit: rep}
	}
	api := explain.API{Missing: "no audit log: " + audit.EnableHint}
	if before != nil {
		if after := scrapeTotals(actx, ec); after != nil {
			m := audit.Delta(before, after, to.Sub(from).Minutes())
			api.Metrics = &m
		}
	}
	return api
}
