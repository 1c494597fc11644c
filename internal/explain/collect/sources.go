package collect

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/tare-dev/tare/internal/kube"
	"github.com/tare-dev/tare/internal/lab"
	"github.com/tare-dev/tare/internal/pprof"
)

// Options say where explain looks for evidence besides the node: they are tare explain's flags.
type Options struct {
	// Kubeconfig is --kubeconfig; "" uses the lab's when one runs, else $KUBECONFIG or ~/.kube/config.
	Kubeconfig string
	// Context is --context: a context of the kubeconfig other than its current one. Naming one that is not
	// the lab's context (lab.ContextName) leaves the lab out, as naming another kubeconfig does.
	Context string
	// LabDir is the lab to use when one runs and no other kubeconfig is given.
	LabDir string
	// Audit is a kube-apiserver audit log (JSON lines); "" uses the lab's if it writes one; "none" skips it.
	Audit string
	// Pprof names the components to profile: "auto" (every reachable one), "none", or names.
	Pprof []string
	// PprofURL are other Go programs to profile, each NAME=URL (checked with ParsePprofURL).
	PprofURL []string
	// FlameDir is where the flame graphs go (COMPONENT.svg); "" writes none.
	FlameDir string
	// Node is this host's name as its kubelet's node, whose kubelet is profiled through the API server.
	Node string
	// Recording is the path of a recording to explain instead of measuring; it has no profiles.
	Recording string
	// Duration is the window to measure and profile (live only).
	Duration time.Duration
	// Progress, when set, is called with what Collect waits for once the measurement is over.
	Progress func(stage string)
}

// Sources are what Discover found to read: a cluster, a lab, an audit log, pprof endpoints. Any may be
// missing; Notes say why.
type Sources struct {
	Cluster *kube.Cluster
	Lab     *lab.Lab
	Audit   string         // the audit log to read; "" for none
	Targets []pprof.Target // the endpoints to profile over a live window
	Notes   []string       // what is missing, and what to do about it
	opts    Options
}

// Discover finds the cluster, lab, audit log and pprof endpoints that o points at, noting what is missing.
// It reads local files only: nothing here contacts a server.
func Discover(o Options) *Sources {
	s := &Sources{Audit: o.Audit, opts: o}
	otherContext := o.Context != "" && o.Context != lab.ContextName(o.LabDir)
	if l, err := lab.Open(o.LabDir); err == nil && !otherContext && (o.Kubeconfig == "" || sameFile(o.Kubeconfig, l.Kubeconfig())) {
		s.Lab = l
	}
	kc, kctx := o.Kubeconfig, o.Context
	if kc == "" && s.Lab != nil {
		kc, kctx = s.Lab.Kubeconfig(), "" // the lab's own kubeconfig, at its only context
	}
	switch c, err := connect(kc, kctx); {
	case err == nil:
		s.Cluster = c
	case errors.Is(err, kube.ErrNoKubeconfig):
		s.Notes = append(s.Notes, "no kubeconfig: the cluster rules, API metrics and profiles through the API server are skipped (give --kubeconfig)")
	default:
		s.Notes = append(s.Notes, err.Error())
	}
	if s.Audit == "" && s.Lab != nil && s.Lab.State.Audit != "" {
		s.Audit = s.Lab.State.Audit
	}
	if s.Audit == "none" {
		s.Audit = ""
	}
	if o.Recording == "" {
		s.Targets = s.pprofTargets()
	} else if s.profilesAsked() {
		s.Notes = append(s.Notes, "profiles are taken live: none for a recording")
	}
	return s
}

// Kubeconfig is the kubeconfig of the cluster found and the context used in it ("" for its current
// one); "" and "" without a cluster.
func (s *Sources) Kubeconfig() (path, context string) {
	if s.Cluster == nil {
		return "", ""
	}
	return s.Cluster.Source, s.Cluster.Context
}

// profilesAsked: the user named components or URLs to profile (not just the default "auto" or "none").
func (s *Sources) profilesAsked() bool {
	p := s.opts.Pprof
	return len(p) > 0 && p[0] != "auto" && p[0] != "none" || len(s.opts.PprofURL) > 0
}

// pprofTargets picks the endpoints to profile: the lab's, or the API server's and this node's kubelet
// through it, filtered by Options.Pprof; plus every Options.PprofURL.
func (s *Sources) pprofTargets() []pprof.Target {
	var all []pprof.Target
	switch {
	case s.Lab != nil:
		ts, err := s.Lab.PprofTargets()
		if err != nil {
			s.Notes = append(s.Notes, "lab pprof endpoints: "+err.Error())
		}
		all = ts
	case s.Cluster != nil:
		all = s.Cluster.PprofTargets(s.opts.Node)
	}
	want := map[string]bool{}
	for _, c := range s.opts.Pprof {
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
			s.Notes = append(s.Notes, fmt.Sprintf("pprof: no endpoint known for %q (give --pprof-url %s=URL)", c, c))
		}
	}
	for _, u := range s.opts.PprofURL {
		if t, err := ParsePprofURL(u); err == nil {
			out = append(out, t)
		} else {
			s.Notes = append(s.Notes, err.Error())
		}
	}
	return out
}

// ParsePprofURL reads NAME=URL, where URL/debug/pprof/profile answers (a trailing /debug/pprof is
// allowed), into a target.
func ParsePprofURL(u string) (pprof.Target, error) {
	name, raw, ok := strings.Cut(u, "=")
	base := strings.TrimRight(strings.TrimSuffix(strings.TrimRight(raw, "/"), "/debug/pprof"), "/")
	parsed, err := url.Parse(base)
	if !ok || name == "" || err != nil || parsed.Scheme != "http" && parsed.Scheme != "https" || parsed.Host == "" {
		return pprof.Target{}, fmt.Errorf("--pprof-url %q: want NAME=http(s)://HOST:PORT", u)
	}
	return pprof.Target{Component: name, Base: base}, nil
}

func sameFile(a, b string) bool {
	x, err1 := os.Stat(a)
	y, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(x, y)
}

// connect reaches the cluster of kubeconfig kc at its context kctx ("" for the current one) for the rules,
// metrics and profiles; it does not contact the server.
func connect(kc, kctx string) (*kube.Cluster, error) {
	c, err := kube.NewClient(kc, kube.Options{Context: kctx})
	if err != nil {
		return nil, err
	}
	return c.Cluster()
}
