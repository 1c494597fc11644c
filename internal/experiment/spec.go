package experiment

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/tare-dev/tare/internal/compare"
	"github.com/tare-dev/tare/internal/component"
	"github.com/tare-dev/tare/internal/lab"
	"github.com/tare-dev/tare/internal/userfile"
)

// Spec is an experiment file (YAML).
type Spec struct {
	Name        string    `json:"name"`
	Description string    `json:"description,omitempty"`
	Target      Target    `json:"target"`
	Trials      int       `json:"trials"`             // per variant
	Warmup      Duration  `json:"warmup"`             // after the guard, before the window; discarded
	Window      Duration  `json:"window"`             // measured
	Interval    Duration  `json:"interval,omitempty"` // between samples (default 1s)
	Seed        uint64    `json:"seed,omitempty"`     // of the trial order (default: from the clock, recorded)
	Alpha       float64   `json:"alpha,omitempty"`    // default 0.05
	Metrics     []string  `json:"metrics,omitempty"`  // default: all
	Primary     string    `json:"primary,omitempty"`  // the metric a recommendation rests on (default control-plane-cpu, or node-busy)
	Guard       Guard     `json:"guard"`
	Variants    []Variant `json:"variants,omitempty"`
	Sweep       *Sweep    `json:"sweep,omitempty"`
	// MDE makes the experiment sequential (sequential.go): the change of the primary metric to detect
	// with 80% power. A pilot of PilotRounds rounds (default 3, in a concurrent experiment 2;
	// trials is then not used) measures the noise, tare plans the rounds that detect MDE (within Budget,
	// when given), and it stops as soon as the answer is clear.
	MDE         Percent  `json:"mde,omitempty"`
	Budget      Duration `json:"budget,omitempty"`
	PilotRounds int      `json:"pilot_rounds,omitempty"`
}

// Target is the lab (default) or any cluster through commands.
type Target struct {
	Lab      *LabTarget      `json:"lab,omitempty"`
	Commands *CommandsTarget `json:"commands,omitempty"`
}

// LabTarget starts tare's lab for every trial with the variant's flags on top of these.
type LabTarget struct {
	Profile          string   `json:"profile,omitempty"`
	Set              []string `json:"set,omitempty"`
	ControlPlaneOnly bool     `json:"control_plane_only,omitempty"`
	BinDir           string   `json:"bin_dir,omitempty"`
	// Replicas runs this many control-plane-only labs side by side (their ports moved by 100 each, their
	// starts spread over the control plane's strongest period), every one switched to the trial's
	// variant at once, so that a window measures all of them: the labs' own noise is independent and
	// adds up by its square root while a variant's change adds up whole. 0 or 1: one lab.
	Replicas int `json:"replicas,omitempty"`
	// Concurrent runs a round's variants at the same time, each on its share of the replicas (dealt at
	// random every round), measured in one window (concurrent.go): the
	// machine's own drift hits every variant alike and cancels in their difference. Needs replicas, a
	// multiple of the variants' count and at least two labs a variant, and metrics that split by lab.
	Concurrent bool `json:"concurrent,omitempty"`
	// Settle is how long labs that serve more than one trial (shared, retuned or replicas) run after their
	// start before the first trial (default sharedSettle).
	Settle *Duration `json:"settle,omitempty"`
}

// maxSettle bounds settle: the control plane's start-up work is over within a minute or two.
const maxSettle = 10 * time.Minute

// settle is how long the target's labs settle after their start (Settle, or sharedSettle).
func (t *LabTarget) settle() time.Duration {
	if t.Settle == nil {
		return sharedSettle
	}
	return t.Settle.Duration
}

// maxReplicas bounds replicas: each is a control plane of about 500 MB and 25-35m idle.
const maxReplicas = 40

// replicas is the number of labs the target runs (1 for one lab).
func (t *LabTarget) replicas() int { return max(1, t.Replicas) }

// CommandsTarget applies a variant to any cluster: Apply runs with TARE_VARIANT, TARE_VALUE and TARE_SET
// (the variant's COMPONENT.FLAG=VALUE list, space separated) in the environment, then Wait until the
// cluster has settled. Both run with sh -c.
type CommandsTarget struct {
	Apply      string `json:"apply"`
	Wait       string `json:"wait,omitempty"`
	Kubeconfig string `json:"kubeconfig,omitempty"`
}

// Guard is the user experience measured in every trial.
type Guard struct {
	Deployment *bool   `json:"deployment,omitempty"`  // time to a Deployment reachable through its Service (default: on when the target has a node)
	APILatency *bool   `json:"api_latency,omitempty"` // median latency of API GETs (default on)
	Tolerance  Percent `json:"tolerance,omitempty"`   // worsening beyond this flags a variant (default 20%)
	Image      string  `json:"image,omitempty"`       // the guard Deployment's image (default: the lab's web image)
}

// Variant is one configuration: flags to set and Deployments to scale.
type Variant struct {
	Name     string   `json:"name"`
	Baseline bool     `json:"baseline,omitempty"`
	Set      []string `json:"set,omitempty"`   // COMPONENT.FLAG=VALUE
	Scale    []string `json:"scale,omitempty"` // NAMESPACE/DEPLOYMENT=REPLICAS
	// Pause freezes the lab's control plane and node agents (tare lab pause) for the window: the lab is
	// paused after the guard and the warm-up, measured, and unpaused before the next trial. Lab target only.
	Pause bool `json:"pause,omitempty"`
	// Run is a command (sh -c) the variant runs beside the cluster from the end of the guard to the end of
	// the window, e.g. an agent whose cost is the question: its CPU counts in the group tare puts it in.
	// It is stopped (its process group) after the window; its output goes to DIR/trial-NNN-run.log.
	Run string `json:"run,omitempty"`
	// Manifests are YAML files of Kubernetes objects (paths relative to the spec; Load makes them
	// absolute) that the variant installs on the lab for each of its trials, as kubectl apply would
	// (server-side apply), after the guard: at least one DaemonSet, whose pods must all be scheduled and
	// Ready before the warm-up starts. They are removed after the window, and their pods waited out
	// (manifests.go). The DaemonSet's pods' CPU and memory are reported per pod and per node (the
	// daemonset family of metrics). Lab target with a node only.
	Manifests []string `json:"manifests,omitempty"`
	// Helm is a chart the variant installs with its manifests, the same way: rendered by the lab's helm
	// (helm template) and applied, removed after the window (helm.go).
	Helm *HelmRelease `json:"helm,omitempty"`
}

// HelmRelease is a chart and its values. tare renders it with helm template (the lab's cached helm,
// built by the first experiment that needs it) and applies the objects as it applies manifests, so it
// runs no hooks and leaves no release secret: the objects the chart makes are what is measured.
type HelmRelease struct {
	Chart     string         `json:"chart"`               // a chart directory or archive, relative to the spec
	Values    map[string]any `json:"values,omitempty"`    // as a values file gives them
	Release   string         `json:"release,omitempty"`   // the release name (default: the variant's name)
	Namespace string         `json:"namespace,omitempty"` // created with the release and removed after it (default: the release name)
}

// Duration reads "10s" or "1m" in YAML.
type Duration struct{ time.Duration }

// UnmarshalJSON accepts a Go duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	s, err := strconv.Unquote(string(b))
	if err != nil {
		return fmt.Errorf("want a duration such as \"30s\", got %s", b)
	}
	d.Duration, err = time.ParseDuration(s)
	return err
}

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return []byte(strconv.Quote(d.String())), nil }

// Percent reads "20%" or 20.
type Percent float64

// UnmarshalJSON accepts "20%" or a number.
func (p *Percent) UnmarshalJSON(b []byte) error {
	s := strings.TrimSuffix(strings.Trim(string(b), `"`), "%")
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return fmt.Errorf("want a percentage such as \"20%%\", got %s", b)
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return fmt.Errorf("want a finite percentage such as \"20%%\", got %s", b)
	}
	*p = Percent(v)
	return nil
}

// maxSpec bounds a spec file: one is a few kilobytes of YAML.
const maxSpec = 1 << 20

// Load reads and checks a spec file. Each adjust changes the spec as read (command-line flags that
// override its fields) before the check.
func Load(path string, adjust ...func(*Spec) error) (*Spec, error) {
	b, err := userfile.ReadAll(path, "experiment spec", maxSpec)
	if err != nil {
		return nil, err
	}
	s, err := Parse(b, adjust...)
	if err != nil {
		return nil, err
	}
	if err := s.resolveManifests(filepath.Dir(path)); err != nil {
		return nil, fmt.Errorf("spec: %w", err)
	}
	return s, nil
}

// Parse reads a spec, rejecting unknown fields, applies each adjust, checks it and fills the defaults.
func Parse(b []byte, adjust ...func(*Spec) error) (*Spec, error) {
	var s Spec
	if err := yaml.UnmarshalStrict(b, &s); err != nil {
		return nil, fmt.Errorf("spec: %w", err)
	}
	for _, a := range adjust {
		if err := a(&s); err != nil {
			return nil, err
		}
	}
	if err := s.check(); err != nil {
		return nil, fmt.Errorf("spec: %w", err)
	}
	return &s, nil
}

func (s *Spec) check() error {
	if s.Name == "" {
		return fmt.Errorf("no name")
	}
	if s.Target.Lab == nil && s.Target.Commands == nil {
		s.Target.Lab = &LabTarget{}
	}
	if s.Target.Lab != nil && s.Target.Commands != nil {
		return fmt.Errorf("target: give lab or commands, not both")
	}
	if c := s.Target.Commands; c != nil && c.Apply == "" {
		return fmt.Errorf("target.commands: no apply command")
	}
	if s.MDE < 0 || s.MDE >= 100 {
		return fmt.Errorf("mde %g%%: want the change to detect, a percentage above 0 and below 100 (e.g. 2%%)", float64(s.MDE))
	}
	if s.Budget.Duration < 0 {
		return fmt.Errorf("budget: must not be negative")
	}
	if s.MDE > 0 {
		if s.PilotRounds == 0 {
			s.PilotRounds = defaultPilotRounds
			if s.concurrent() {
				// Every lab's value in two rounds already shows the noise (stats.LabEffect).
				s.PilotRounds = 2
			}
		}
		if s.PilotRounds < 2 {
			return fmt.Errorf("pilot_rounds %d: at least 2 rounds (pairs) are needed to see the noise", s.PilotRounds)
		}
		if s.Sweep != nil {
			return fmt.Errorf("mde plans an A/B experiment; a sweep is not sequential (drop mde, or compare two values)")
		}
		s.Trials = s.PilotRounds // the plan adds rounds after the pilot
	} else if s.Budget.Duration > 0 || s.PilotRounds != 0 {
		return fmt.Errorf("budget and pilot_rounds plan a sequential experiment: give mde (the change to detect, e.g. 2%%) too")
	}
	if s.Trials < 2 {
		return fmt.Errorf("trials: %d per variant; at least 2 are needed to see any spread, and 4 for a difference to reach significance at alpha 0.05 (Mann–Whitney's smallest p with 3 against 3 is 0.10)", s.Trials)
	}
	if s.Window.Duration <= 0 {
		return fmt.Errorf("window: must be positive (e.g. 30s)")
	}
	if s.Interval.Duration == 0 {
		s.Interval.Duration = time.Second
	}
	if s.Interval.Duration < 100*time.Millisecond || s.Interval.Duration > s.Window.Duration/2 {
		return fmt.Errorf("interval %s: want 100ms to half the window", s.Interval.Duration)
	}
	if s.Warmup.Duration < 0 {
		return fmt.Errorf("warmup: must not be negative")
	}
	if s.Alpha == 0 {
		s.Alpha = 0.05
	}
	if s.Alpha <= 0 || s.Alpha >= 0.5 {
		return fmt.Errorf("alpha %g: want between 0 and 0.5", s.Alpha)
	}
	if s.Guard.Tolerance == 0 {
		s.Guard.Tolerance = 20
	}
	if s.Guard.Tolerance < 0 || s.Guard.Tolerance > 1000 {
		return fmt.Errorf("guard.tolerance %g%%: want a positive percentage up to 1000%% (how much worse the guard may get, e.g. 20%%)", float64(s.Guard.Tolerance))
	}
	if s.Sweep != nil {
		if len(s.Sweep.Values) < 2 {
			return fmt.Errorf("sweep: at least 2 values")
		}
		var expanded []Variant
		for i, v := range s.Sweep.Values {
			expanded = append(expanded, Variant{Name: v, Baseline: i == 0, Set: []string{s.Sweep.Flag + "=" + v}})
		}
		switch {
		case len(s.Variants) == 0:
			s.Variants = expanded
		case !sameVariants(s.Variants, expanded): // a stored spec holds its sweep expanded
			return fmt.Errorf("give variants or a sweep, not both")
		}
	}
	if len(s.Variants) < 2 {
		return fmt.Errorf("variants: at least 2 (a baseline and a change), or a sweep")
	}
	names := map[string]bool{}
	baselines := 0
	for i, v := range s.Variants {
		if v.Name == "" {
			return fmt.Errorf("variant %d has no name", i+1)
		}
		if names[v.Name] {
			return fmt.Errorf("two variants are named %q", v.Name)
		}
		names[v.Name] = true
		if v.Baseline {
			baselines++
		}
		if _, err := v.tunings(); err != nil {
			return fmt.Errorf("variant %s: %w", v.Name, err)
		}
		if v.Pause && s.Target.Lab == nil {
			return fmt.Errorf("variant %s: pause freezes tare's lab; it needs the lab target", v.Name)
		}
		if err := s.checkManifests(v); err != nil {
			return fmt.Errorf("variant %s: %w", v.Name, err)
		}
		for _, sc := range v.Scale {
			if _, _, _, err := parseScale(sc); err != nil {
				return fmt.Errorf("variant %s: %w", v.Name, err)
			}
		}
	}
	switch baselines {
	case 0:
		s.Variants[0].Baseline = true
	case 1:
	default:
		return fmt.Errorf("%d variants say baseline: true; one is the baseline", baselines)
	}
	if s.Target.Lab != nil {
		if _, err := lab.ProfileTunings(s.Target.Lab.Profile); err != nil {
			return fmt.Errorf("target.lab: %w", err)
		}
		if st := s.Target.Lab.Settle; st != nil && (st.Duration < 0 || st.Duration > maxSettle) {
			return fmt.Errorf("target.lab.settle %s: want 0s to %s (default %s)", st.Duration, maxSettle, sharedSettle)
		}
		for _, x := range s.Target.Lab.Set {
			if _, err := lab.ParseSet(x); err != nil {
				return fmt.Errorf("target.lab.set: %w", err)
			}
		}
		if err := s.checkReplicas(); err != nil {
			return err
		}
		if err := s.checkConcurrent(); err != nil {
			return err
		}
	}
	for _, m := range s.Metrics {
		if !compare.KnownFamily(m) {
			return fmt.Errorf("unknown metric %q (known: %s)", m, strings.Join(compare.Families(), ", "))
		}
	}
	if s.Primary != "" && !compare.KnownPrimary(s.Primary) {
		return fmt.Errorf("unknown primary metric %q (known: %s)", s.Primary, strings.Join(compare.Families(), ", "))
	}
	return nil
}

// checkReplicas refuses replicas that cannot run side by side: out of range, labs with nodes, or variants
// that need a lab of their own for every trial.
func (s *Spec) checkReplicas() error {
	lt := s.Target.Lab
	switch {
	case lt.Replicas < 0 || lt.Replicas > maxReplicas:
		return fmt.Errorf("target.lab.replicas %d: want 1 to %d (0 is one lab)", lt.Replicas, maxReplicas)
	case lt.Replicas <= 1:
		return nil
	case !lt.ControlPlaneOnly:
		return fmt.Errorf("target.lab.replicas %d: replicas run side by side only without nodes; add control_plane_only: true", lt.Replicas)
	case slices.ContainsFunc(s.Variants, func(v Variant) bool { return v.Pause }):
		return fmt.Errorf("target.lab.replicas %d: pause freezes one lab (its cgroup is the machine's); drop replicas", lt.Replicas)
	case !s.SharedLab() && !lab.CanRetune(s.variedComponents()):
		return fmt.Errorf("target.lab.replicas %d: replicas need variants that share the labs (the same flags and scale) or differ only in flags of components that restart alone (any but kwok)", lt.Replicas)
	}
	return nil
}

// checkConcurrent refuses a concurrent experiment whose variants cannot share the replicas evenly or
// whose metrics cannot be split by lab.
func (s *Spec) checkConcurrent() error {
	lt := s.Target.Lab
	if !lt.Concurrent {
		return nil
	}
	nv := len(s.Variants)
	if lt.Replicas < 2*nv || lt.Replicas%nv != 0 {
		return fmt.Errorf("target.lab.concurrent: %d replicas for %d variants; each variant runs on an equal share of at least 2 labs, so replicas must be a multiple of %d from %d (e.g. %d)",
			lt.Replicas, nv, nv, 2*nv, max(2*nv, (lt.Replicas+nv-1)/nv*nv))
	}
	if s.guardDeployment() {
		return fmt.Errorf("target.lab.concurrent: the guard Deployment needs a node; set guard.deployment: false")
	}
	if len(s.Metrics) == 0 {
		s.Metrics = slices.Clone(concurrentMetrics)
	}
	for _, m := range s.Metrics {
		if !slices.Contains(concurrentMetrics, m) {
			return fmt.Errorf("target.lab.concurrent: metric %s is the whole node's, every variant's at once; a concurrent experiment measures %s", m, strings.Join(concurrentMetrics, ", "))
		}
	}
	switch s.Primary {
	case compare.NodeBusy:
		return fmt.Errorf("target.lab.concurrent: primary metric node-busy is the whole node's, every variant's at once; use control-plane-cpu or a component's")
	case GuardReady:
		return fmt.Errorf("target.lab.concurrent: primary metric %s is the guard Deployment's, which needs a node; use control-plane-cpu or a component's", GuardReady)
	}
	return nil
}

// tunings parses the variant's --set list.
func (v Variant) tunings() ([]lab.Tuning, error) {
	var ts []lab.Tuning
	for _, x := range v.Set {
		t, err := lab.ParseSet(x)
		if err != nil {
			return nil, err
		}
		ts = append(ts, t)
	}
	return ts, nil
}

// parseScale reads a scale entry, NAMESPACE/DEPLOYMENT=REPLICAS, with names Kubernetes allows.
func parseScale(s string) (ns, name string, replicas int32, err error) {
	key, val, ok := strings.Cut(s, "=")
	ns, name, ok2 := strings.Cut(key, "/")
	n, err := strconv.ParseInt(val, 10, 32)
	if !ok || !ok2 || len(validation.IsDNS1123Label(ns)) > 0 || len(validation.IsDNS1123Subdomain(name)) > 0 || err != nil || n < 0 {
		return "", "", 0, fmt.Errorf("scale %q: want NAMESPACE/DEPLOYMENT=REPLICAS", s)
	}
	return ns, name, int32(n), nil
}

// Baseline returns the baseline variant.
func (s *Spec) Baseline() Variant {
	for _, v := range s.Variants {
		if v.Baseline {
			return v
		}
	}
	return s.Variants[0]
}

// deployment: on by default for a lab with a node; on another cluster only with an image that serves
// HTTP 200 on / and /healthz at port 8080 (the lab's web image is only in the lab).
func (s *Spec) guardDeployment() bool {
	g := s.Guard
	if g.Deployment != nil {
		return *g.Deployment
	}
	if s.Target.Lab != nil {
		return !s.Target.Lab.ControlPlaneOnly
	}
	return g.Image != ""
}

func (g Guard) image() string {
	if g.Image != "" {
		return g.Image
	}
	return defaultImage
}

func (g Guard) apiLatency() bool { return g.APILatency == nil || *g.APILatency }

func sameVariants(a, b []Variant) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name || a[i].Baseline != b[i].Baseline || a[i].Pause != b[i].Pause || a[i].Run != b[i].Run || !slices.Equal(a[i].Manifests, b[i].Manifests) || (a[i].Helm == nil) != (b[i].Helm == nil) || strings.Join(a[i].Set, " ") != strings.Join(b[i].Set, " ") {
			return false
		}
	}
	return true
}

// SharedLab says whether every variant runs the same lab (the same flags and the same scale, differing only
// in what runs beside it, pause or nothing at all): then one lab serves the whole experiment, started once,
// and no trial pays for a restart or carries a restart's noise. Trials stay exchangeable: every one of them
// runs on the same long-lived lab, in a random order within each round.
func (s *Spec) SharedLab() bool {
	if s.Target.Lab == nil || len(s.Variants) == 0 {
		return false
	}
	first := s.Variants[0]
	for _, v := range s.Variants[1:] {
		if !slices.Equal(v.Set, first.Set) || !slices.Equal(v.Scale, first.Scale) {
			return false
		}
	}
	return true
}

// variedComponents lists, in the registry's order, the lab components whose flags differ between variants
// (the target's flags, then each variant's).
func (s *Spec) variedComponents() []string {
	if s.Target.Lab == nil || len(s.Variants) == 0 {
		return nil
	}
	first, err := labSets(s.Target.Lab, s.Variants[0])
	if err != nil {
		return nil
	}
	var varied []string
	for _, v := range s.Variants[1:] {
		ts, err := labSets(s.Target.Lab, v)
		if err != nil {
			return nil
		}
		varied = append(varied, lab.Changed(first, ts)...)
	}
	return component.Names(func(e component.Entry) bool { return slices.Contains(varied, e.Name) })
}
