package density

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/tare-dev/tare/internal/classify"
	"github.com/tare-dev/tare/internal/fit"
	"github.com/tare-dev/tare/internal/kube"
	"github.com/tare-dev/tare/internal/session"
	"github.com/tare-dev/tare/internal/summary"

	"github.com/tare-dev/tare/internal/warning"
)

// Options say what a density run does.
type Options struct {
	Node      string        // the node to fill; "" for the cluster's only schedulable node
	Host      string        // the name of the machine measured (sample.HostName): warned about when not Node
	Namespace string        // created for the run and deleted after it; it must not exist
	Image     string        // the idle pods' image
	Command   []string      // its containers' command; nil for the image's own
	PullNever bool          // the image is on the node already (the lab's images): never pull it
	Counts    []int         // pod counts, increasing
	Trials    int           // repetitions of every count, in shuffled order
	Window    time.Duration // measured at each step
	Settle    time.Duration // waited after the pods are Running, before measuring
	Seed      uint64        // orders the steps and seeds the bootstrap
	MaxPods   int           // the pod limit kube-reserved is sized for; 0 for the node's own
	// Containers is how many containers of Image each pod runs (0 counts as 1).
	Containers int
	// Kwok puts the pods on the cluster's kwok nodes (label type=kwok) instead of Node: no container runs,
	// and what grows with the pods is the control plane's cost (--kwok).
	Kwok bool
	// Churn is the pod starts per second of the churn phase (--churn), 0 for none: after the steps, Trials
	// pairs of a quiet and a churning window with the smallest count's idle pods running.
	Churn float64
	// Percentile is the percentile of 1 s demand the spike reservations are read at (--percentile),
	// 0 for DefaultPercentile.
	Percentile float64
	// MemoryRoot is the memory cgroup hierarchy's root (MemoryRoot), "" to read no working set: with it,
	// every window reads the node's and the pods' working set each second for the memory reservation.
	MemoryRoot string
	Session    session.Options
	// memory are the cgroups measure reads, found by Run.
	memory *MemoryCgroups
	Say    func(format string, a ...any) // progress lines; nil discards them
}

// Report is a density run's result.
type Report struct {
	Node  string `json:"node"`
	Image string `json:"image"`
	// Containers is how many containers of Image each pod runs.
	Containers int       `json:"containers_per_pod"`
	Counts     []int     `json:"pod_counts"`
	Trials     int       `json:"trials"`
	Window     string    `json:"window"`
	Seed       uint64    `json:"seed"` // repeats the step order and the bootstrap (--seed)
	Started    time.Time `json:"started"`
	Took       string    `json:"took"`
	Steps      []Window  `json:"steps"`
	Model      Model     `json:"model"`
	// KubeReserved is the recommendation for the node's pod limit (--max-pods, else the node's own),
	// nil when the model has too few pod counts.
	KubeReserved *Reserved `json:"kube_reserved"`
	// Spikes are kube-reserved and system-reserved CPU at a percentile of 1 s demand at the same pod
	// limit, nil when the model has too few pod counts.
	Spikes *Spikes `json:"spikes,omitempty"`
	// Memory is the memory kept from the pods at the same pod limit, as the eviction manager counts it,
	// nil without working sets (--memory-root unreadable, no memory controller) or at fewer than two counts.
	Memory *MemoryReserved `json:"memory_reserved,omitempty"`
	// Allocatable is the measured allocatable of the node's shape (Spikes' CPU, Memory's memory), nil
	// when either is missing.
	Allocatable *fit.Allocatable `json:"allocatable,omitempty"`
	// Kwok says the pods ran on kwok nodes (Node names them): the model is the control plane's.
	Kwok bool `json:"kwok,omitempty"`
	// Churn is the churn phase's result (--churn), nil when not asked.
	Churn *Churn `json:"churn,omitempty"`
	// Warnings qualify the report's figures (a window's own warnings are in its step).
	Warnings []warning.Warning `json:"warnings,omitempty"`
}

// WarnOtherNode marks a run where tare measured a machine other than the node the pods ran on.
const WarnOtherNode = "other-node"

// podLabel marks the run's pods.
const podLabel = "tare.dev/density"

// ErrNamespaceExists says the run's namespace is already there (kube.ErrNamespaceExists).
var ErrNamespaceExists = kube.ErrNamespaceExists

// Run fills the node step by step, measures each step's window, and fits the model. Everything it creates
// lives in o.Namespace, which it deletes before returning, also on error or when ctx is cancelled; a run
// cancelled midway returns the steps measured so far with ctx's error.
func Run(ctx context.Context, cs kubernetes.Interface, o Options) (Report, error) {
	say := o.Say
	if say == nil {
		say = func(string, ...any) {}
	}
	if o.Kwok {
		return runKwok(ctx, cs, o, say)
	}
	node, err := fit.ReadNode(ctx, cs, o.Node)
	if err != nil {
		return Report{}, err
	}
	var warnings []warning.Warning
	if o.Host != "" && o.Host != node.Name {
		w := warning.Warning{Code: WarnOtherNode, Figure: "steps",
			Message: fmt.Sprintf("tare measures this machine (%s) and the pods run on node %s: unless that is this machine under another name, run tare density on %s", o.Host, node.Name, node.Name),
			Cause:   "--node names another node than the one tare runs on"}
		say("warning: %s", w.Message)
		warnings = append(warnings, w)
	}
	maxPods := 0
	if q, ok := node.Allocatable[corev1.ResourcePods]; ok {
		maxPods = int(q.Value())
	}
	if err := CheckCounts(o.Counts, maxPods, node.Pods); err != nil {
		return Report{}, fmt.Errorf("--pods on node %s: %w", node.Name, err)
	}
	memWarn, evict, evictFrom := memorySetup(ctx, cs, &o, node, say)
	warnings = append(warnings, memWarn...)
	if err := kube.CreateRunNamespace(ctx, cs, o.Namespace, "tare density"); err != nil {
		return Report{}, err
	}
	defer func() {
		if err := kube.DeleteNamespace(context.WithoutCancel(ctx), cs, o.Namespace, time.Minute); err != nil {
			say("warning: %v", err)
		}
	}()
	rep := Report{Node: node.Name, Image: o.Image, Containers: max(1, o.Containers), Counts: o.Counts, Trials: o.Trials, Window: o.Window.String(), Seed: o.Seed, Started: time.Now(), Warnings: warnings}
	charged := map[string]map[bool]bool{}
	finish := func(err error) (Report, error) {
		rep.Took = time.Since(rep.Started).Round(time.Second).String()
		rep.Model = Fitted(rep.Steps, chargedTo(charged), o.Seed)
		limit := o.MaxPods
		if limit <= 0 {
			limit = maxPods
		}
		rep.KubeReserved = KubeReserved(rep.Steps, rep.Model.OverheadFrom, limit,
			node.Capacity.Cpu().AsApproximateFloat64(), node.Capacity.Memory().AsApproximateFloat64(), o.Seed)
		pct := o.Percentile
		if pct == 0 {
			pct = DefaultPercentile
		}
		spikes, warns, serr := SpikeReservations(rep.Steps, rep.Model.OverheadFrom, limit, pct, rep.Churn)
		rep.Spikes, rep.Warnings = spikes, append(rep.Warnings, warns...)
		kubeMem := math.NaN()
		if rep.KubeReserved != nil {
			kubeMem = rep.KubeReserved.Measured.Memory
		}
		steps := rep.Steps
		if rep.Churn != nil {
			for _, w := range rep.Churn.Windows {
				steps = append(steps, w.Window)
			}
		}
		rep.Memory = ReservedMemory(steps, limit, kubeMem, evict, evictFrom)
		rep.Allocatable = measuredAllocatable(ctx, cs, node, o, limit, rep)
		if err == nil {
			err = serr
		}
		return rep, err
	}
	if err := runSteps(ctx, cs, o, []string{node.Name}, node.Name, &rep, charged, say); err != nil {
		return finish(err)
	}
	if o.Churn > 0 {
		rep.Churn, err = churnPhase(ctx, cs, o, node.Name, o.Counts[0], charged, say)
		return finish(err)
	}
	return finish(nil)
}

// runSteps scales the run's pods on nodes through the counts, every count once per trial in shuffled
// order, and measures a window at each step into rep.Steps. A window cut short by ctx is kept, and the
// steps stop there with ctx's error.
func runSteps(ctx context.Context, cs kubernetes.Interface, o Options, nodes []string, where string, rep *Report, charged map[string]map[bool]bool, say func(string, ...any)) error {
	steps := Order(o.Counts, o.Trials, rand.New(rand.NewPCG(o.Seed, o.Seed+1)))
	for i, st := range steps {
		say("step %d/%d (trial %d): %d pods on %s", i+1, len(steps), st.Trial, st.Pods, where)
		if err := scale(ctx, cs, o, nodes, st.Pods); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(o.Settle):
		}
		w, err := measure(ctx, o, st, charged)
		if err != nil {
			return err
		}
		rep.Steps = append(rep.Steps, w)
		if ctx.Err() != nil { // the window was cut short: keep it, measure no more
			return ctx.Err()
		}
	}
	return nil
}

// scale makes exactly n of the run's pods run on the nodes (pod i on nodes[i % len(nodes)]): it creates
// the missing ones, deletes the extra ones, and waits until n are Running and none is left terminating.
func scale(ctx context.Context, cs kubernetes.Interface, o Options, nodes []string, n int) error {
	node := strings.Join(nodes, ", ")
	pods := cs.CoreV1().Pods(o.Namespace)
	list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: podLabel + "=" + idleLabel})
	if err != nil {
		return fmt.Errorf("listing the run's pods: %w", err)
	}
	have := map[string]bool{}
	for _, p := range list.Items {
		have[p.Name] = true
	}
	// A grace period of 0 removes the pod from the API at once, while its node still stops its containers:
	// the wait below then ended with pods' processes alive in the next step's window (a density run once
	// fitted −76 KiB per busybox-sleep pod so). With 1 s the pod stays, terminating, until its node has
	// stopped it, and the wait waits for that.
	one := int64(1)
	for i := range max(n, len(list.Items)) {
		name := "idle-" + strconv.Itoa(i)
		switch {
		case i < n && !have[name]:
			if _, err := pods.Create(ctx, idlePod(o, nodes[i%len(nodes)], name), metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("creating pod %s: %w", name, err)
			}
		case i >= n && have[name]:
			if err := pods.Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &one}); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("deleting pod %s: %w", name, err)
			}
		}
	}
	timeout := 2*time.Minute + time.Duration(n)*time.Second
	deadline := time.Now().Add(timeout)
	for {
		list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: podLabel + "=" + idleLabel})
		if err != nil {
			return fmt.Errorf("listing the run's pods: %w", err)
		}
		runningN := 0
		for _, p := range list.Items {
			if p.DeletionTimestamp != nil {
				continue // terminating: its node ends it as Failed or Succeeded, and then it is gone
			}
			if err := kube.PodStartFailure(&p); err != nil {
				return err
			}
			if p.Status.Phase == corev1.PodFailed {
				return fmt.Errorf("pod %s failed on node %s: %s: %s", p.Name, node, p.Status.Reason, p.Status.Message)
			}
			if p.Status.Phase == corev1.PodRunning {
				runningN++
			}
		}
		if runningN == n && len(list.Items) == n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d pods Running and %d pods in all on node %s after %v (kubectl -n %s get pods)",
				runningN, n, len(list.Items), node, timeout, o.Namespace)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// idlePod is one of the run's pods: o.Containers containers of the image (at least one), on the node,
// tolerating every taint.
func idlePod(o Options, node, name string) *corev1.Pod {
	pull := corev1.PullIfNotPresent
	if o.PullNever {
		pull = corev1.PullNever
	}
	zero, no := int64(0), false
	containers := make([]corev1.Container, max(1, o.Containers))
	for i := range containers {
		containers[i] = corev1.Container{Name: "idle-" + strconv.Itoa(i), Image: o.Image, ImagePullPolicy: pull, Command: o.Command}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{podLabel: idleLabel}},
		Spec: corev1.PodSpec{
			NodeName: node, TerminationGracePeriodSeconds: &zero, AutomountServiceAccountToken: &no,
			EnableServiceLinks: &no,
			Tolerations:        []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			Containers:         containers,
		},
	}
}

// sessionOptions are the options of each window's session: the caller's, with the baseline's memory read
// exactly.
func sessionOptions(so session.Options) session.Options {
	so.Sampler.ExactBaseline = true
	return so
}

// measure takes one step's window with the measuring session, and notes where each group's processes run.
// The baseline reads every process's smaps_rollup (sample.Options.ExactBaseline): the kube-reserved fit
// rests on each window's PSS, and a window is too short for the deferred readings to come round.
func measure(ctx context.Context, o Options, st Step, charged map[string]map[bool]bool) (Window, error) {
	var memStop func() WindowMemory
	if o.memory != nil {
		memStop = watchMemory(ctx, *o.memory, time.Second)
	}
	res, err := session.Measure(ctx, sessionOptions(o.Session))
	var mem *WindowMemory
	if memStop != nil {
		m := memStop()
		mem = &m
	}
	if err != nil {
		return Window{}, fmt.Errorf("measuring %d pods: %w", st.Pods, err)
	}
	if len(res.Samples) < 2 && ctx.Err() != nil {
		return Window{}, ctx.Err() // cut short before a whole interval: nothing to keep
	}
	if len(res.Samples) < 2 {
		return Window{}, fmt.Errorf("measuring %d pods: %d sample(s)", st.Pods, len(res.Samples))
	}
	for _, x := range res.Samples {
		for _, info := range x.New {
			_, inPod := classify.PodFromCgroup(info.Cgroup)
			group := info.Group
			if info.GroupKind == classify.KindPod {
				group = PodsGroup
			}
			if charged[group] == nil {
				charged[group] = map[bool]bool{}
			}
			charged[group][inPod] = true
		}
	}
	sum := summary.Build(res.Meta, res.Samples, summary.Options{})
	w := Window{Step: st, Start: sum.Window.Start, Seconds: sum.Window.Seconds, Busy: sum.Node.Busy.Mean, Groups: map[string]Cost{},
		CPUSeries: map[string][]float64{}}
	series := sum.GroupSeries()
	for _, g := range sum.Groups {
		name := g.Name
		switch g.Kind {
		case classify.KindPod:
			name = PodsGroup
		case classify.KindKernel, classify.KindOther:
			if !slices.Contains(w.System, name) {
				w.System = append(w.System, name)
			}
		}
		w.CPUSeries[name] = addSeries(w.CPUSeries[name], series[g.Name])
		c := w.Groups[name]
		c.CPU += g.CPU.Mean
		c.RSS += g.RSS
		c.PSS += g.PSS
		c.Private += g.Private
		w.Groups[name] = c
	}
	w.Warnings = res.Warnings
	w.WorkingSet = mem
	return w, nil
}

// chargedTo reduces what measure noted to InPodCgroup, OutsidePodCgroup or Mixed per group.
func chargedTo(seen map[string]map[bool]bool) map[string]string {
	out := map[string]string{}
	for g, m := range seen {
		switch {
		case m[true] && m[false]:
			out[g] = Mixed
		case m[true]:
			out[g] = InPodCgroup
		default:
			out[g] = OutsidePodCgroup
		}
	}
	return out
}

// addSeries adds ys to xs value by value, growing xs to ys's length.
func addSeries(xs, ys []float64) []float64 {
	for len(xs) < len(ys) {
		xs = append(xs, 0)
	}
	for i, y := range ys {
		xs[i] += y
	}
	return xs
}
