package netpath

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/tare-dev/tare/internal/datapath"
	"github.com/tare-dev/tare/internal/kernel"
	"github.com/tare-dev/tare/internal/kube"
	"github.com/tare-dev/tare/internal/session"

	"github.com/tare-dev/tare/internal/warning"
)

// Options say what a run measures.
type Options struct {
	Node      string // the node of the pods and of the host baseline; "" for the node named Host, else the only one
	Host      string // the machine tare measures (sample.HostName)
	Namespace string // created for the run and deleted after it; it must not exist
	Image     string // holds iperf3 and sockperf
	PullNever bool   // the image is on the nodes already (the lab's)
	Paths     []Lane // from ParsePaths
	Modes     []Mode
	Sizes     []int
	Rounds    int           // trials of every lane, interleaved
	Duration  time.Duration // of every trial, whole seconds
	Parallel  int           // streams of a stream mode, transactions under way at once of tcp-crr
	CRR       CRR           // tare-crr, for tcp-crr: on the machine (the host path) and in the image
	Seed      uint64        // orders the trials
	Session   session.Options
	// Exec runs a command in a pod's container (kube.Client.Exec); needed by the pod paths.
	Exec func(ctx context.Context, ns, pod, container string, cmd []string, stdout, stderr io.Writer) error
	// SetOverlay switches the tare lab's cross-node pod network between routed and VXLAN; nil when the
	// cluster is not a tare lab (the vxlan path is then skipped).
	SetOverlay func(vxlan bool) error
	// MTUs are the pod MTUs each pod network path runs with, one lane each (--mtu; none: the network's
	// own). SetPodMTU sets the tare lab's pod network MTU (nil: not a tare lab, and MTUs must be empty);
	// PodMTU is the MTU the pod network has (0: unknown), set again after the run.
	// UnderlayOverhead is how far the node network's MTU stays above the pod network's (the tunnel's
	// headers): host-cross-node's lane at MTU m runs with the pod network set to m − UnderlayOverhead,
	// so that the node network it crosses is at m.
	MTUs             []int
	SetPodMTU        func(mtu int) error
	PodMTU           int
	UnderlayOverhead int
	Say              func(format string, a ...any) // progress lines; nil discards them
}

// Report is a run's result.
type Report struct {
	Node       string `json:"node"`
	RemoteNode string `json:"remote_node,omitempty"`
	Baseline   string `json:"baseline"`
	// Baselines name each measured lane's baseline (by its label): host-cross-node for the pod network's
	// cross-node paths when it was measured, else Baseline.
	Baselines map[string]string `json:"baselines,omitempty"`
	Lanes     []Lane            `json:"lanes"`
	PodMTU    int               `json:"pod_mtu,omitempty"`       // the pod network's own MTU, restored after the run
	Skipped   map[string]string `json:"skipped_paths,omitempty"` // path → why it was not measured
	Parallel  int               `json:"parallel"`
	datapath.Schedule
	Trials []Trial `json:"trials"`
	Ratios []Ratio `json:"ratios"`
	// Warnings qualify the report's figures (a trial's own window warnings are in the trial).
	Warnings []warning.Warning `json:"warnings,omitempty"`
}

// ErrNoPaths says no path asked for can be measured here.
var ErrNoPaths = errors.New("no path can be measured")

// Run measures every lane Rounds times in shuffled order, with the measuring session running during each
// trial, and compares every path with the host. Everything it creates in the cluster lives in
// o.Namespace, deleted before it returns, also on error or Ctrl-C; the host servers are stopped and the lab's
// overlay is left routed. A run cut short returns the trials finished so far with ctx's error.
func Run(ctx context.Context, cs kubernetes.Interface, o Options) (Report, error) {
	say := o.Say
	if say == nil {
		say = func(string, ...any) {}
	}
	rep := Report{Node: o.Host, Baseline: string(Host), Parallel: o.Parallel, Schedule: datapath.ScheduleOf(o.Rounds, o.Duration, o.Seed), Skipped: map[string]string{}}
	if o.Duration < time.Second || o.Duration%time.Second != 0 {
		return rep, fmt.Errorf("--duration %s: trials last whole seconds, at least 1s", o.Duration)
	}
	paths := map[Path]bool{}
	for _, l := range o.Paths {
		paths[l.Path] = true
	}
	crr := slices.ContainsFunc(o.Modes, Mode.UsesCRR)
	if paths[Host] || paths[HostCrossNode] {
		if err := toolsOnMachine(); err != nil {
			return rep, err
		}
		if crr && o.CRR.Host == "" {
			return rep, errors.New("tcp-crr on the host paths runs tare-crr on this machine: none was given (tare lab install --datapath builds it)")
		}
	}
	podPaths := paths[HostCrossNode] || paths[HostNetPod] || paths[PodSameNode] || paths[PodCrossNode] || paths[VXLAN] || paths[ClusterIP]
	if podPaths {
		if cs == nil || o.Exec == nil {
			return rep, errors.New("the pod paths need a cluster: give --kubeconfig (or start one with tare lab up), or measure --paths host only")
		}
		if crr && o.CRR.Pod == "" {
			return rep, errors.New("tcp-crr in pods runs tare-crr from the image: none was named")
		}
		n, warns, err := datapath.PickNodes(ctx, cs, o.Node, o.Host, say)
		if err != nil {
			return rep, err
		}
		rep.Node, rep.RemoteNode, rep.Warnings = n.Node, n.Remote, append(rep.Warnings, warns...)
		if rep.RemoteNode == "" {
			for _, p := range []Path{HostCrossNode, PodCrossNode, VXLAN} {
				if paths[p] {
					rep.Skipped[string(p)] = "needs a second node that takes pods (a lab with tare lab up --nodes 2)"
				}
			}
		}
		if paths[VXLAN] && o.SetOverlay == nil {
			if _, ok := rep.Skipped[string(VXLAN)]; !ok {
				rep.Skipped[string(VXLAN)] = "switches the tare lab's overlay; on another cluster pod-cross-node measures what its CNI does"
			}
		}
		for p := range rep.Skipped {
			delete(paths, Path(p))
		}
	}
	for p, why := range rep.Skipped {
		say("skipping path %s: %s", p, why)
	}
	var lanes []Lane
	for _, l := range o.Paths {
		if paths[l.Path] {
			lanes = append(lanes, l)
		}
	}
	if len(lanes) == 0 {
		var why []string
		for _, p := range slices.Sorted(maps.Keys(rep.Skipped)) {
			why = append(why, p+" "+rep.Skipped[p])
		}
		return rep, fmt.Errorf("%w: %s", ErrNoPaths, strings.Join(why, "; "))
	}
	if len(o.MTUs) > 0 && o.SetPodMTU == nil {
		return rep, errors.New("--mtu sets the tare lab's pod network MTU: this cluster is not a tare lab (measure with --lab-dir, or without --mtu)")
	}
	if len(o.MTUs) > 0 && !slices.ContainsFunc(lanes, func(l Lane) bool { return l.Path.MTUSet() }) {
		return rep, errors.New("--mtu sets the pod network's and the node network's MTU, and none of --paths runs over them (host and hostnet-pod use the loopback): add host-cross-node, pod-same-node, pod-cross-node, vxlan or clusterip")
	}
	plan := Plan(lanes, o.Modes, o.Sizes, o.MTUs)
	if err := CheckLanes(plan); err != nil {
		return rep, err
	}
	rep.Lanes = plan
	e := &endpoints{ips: map[string]string{}}
	// The namespace's deletion waits for it to go: deferred first, it runs last, after the quick undoing
	// of what the run changed on the machine.
	if podPaths {
		if err := kube.CreateRunNamespace(ctx, cs, o.Namespace, "tare datapath"); err != nil {
			return rep, err
		}
		defer func() {
			if err := kube.DeleteNamespace(context.WithoutCancel(ctx), cs, o.Namespace, time.Minute); err != nil {
				say("warning: %v", err)
			}
		}()
	}
	crossNode := o.SetOverlay != nil && (paths[VXLAN] || paths[PodCrossNode])
	rep.PodMTU = o.PodMTU
	mtu := o.PodMTU // the pod network's, as the trials left it; -1 while a switch is under way or failed
	defer func() {
		if mtu != o.PodMTU && o.PodMTU > 0 {
			if err := o.SetPodMTU(o.PodMTU); err != nil {
				say("warning: setting the lab's pod MTU back to %d: %v (tare lab down removes the network)", o.PodMTU, err)
			}
		}
		e.stopHostServers()
		if crossNode {
			if err := o.SetOverlay(false); err != nil {
				say("warning: switching the lab's overlay back to routed: %v (tare lab down removes it)", err)
			}
		}
	}()
	// Whatever the overlay was, the cross-node trials start routed: the run switches it for vxlan's.
	if crossNode {
		if err := o.SetOverlay(false); err != nil {
			return finish(rep, fmt.Errorf("setting the lab's overlay to routed: %w", err))
		}
	}
	if podPaths {
		say("starting the servers' pods in namespace %s", o.Namespace)
		podCRR := ""
		if crr {
			podCRR = o.CRR.Pod
		}
		made, err := createPods(ctx, cs, o.Namespace, o.Image, o.PullNever, podCRR, podsFor(paths, rep.Node, rep.RemoteNode), paths[ClusterIP], 2*time.Minute)
		if err != nil {
			return finish(rep, err)
		}
		e.ips, e.svcIP = made.ips, made.svcIP
		if paths[HostNetPod] {
			// The hostNetwork pod's servers listen on the node's loopback only (no probe reaches them).
			ports := []int{hostNetIperfPort, hostNetSockperfPort}
			if crr {
				ports = append(ports, hostNetCRRPort)
			}
			for _, port := range ports {
				if err := waitListening(ctx, port, time.Minute); err != nil {
					return finish(rep, fmt.Errorf("the hostNetwork pod's servers: %w", err))
				}
			}
		}
	}
	if paths[Host] {
		hostCRR := ""
		if crr {
			hostCRR = o.CRR.Host
		}
		if err := e.startHostServers(ctx, hostCRR); err != nil {
			return finish(rep, err)
		}
	}
	loopMTU := loopbackMTU()
	vxlanOn := false
	trials, err := datapath.Rounds[Lane, Trial]{Lanes: plan, N: o.Rounds, Seed: o.Seed, Say: say, Line: Trial.line, Name: func(l Lane) string {
		return fmt.Sprintf("%s %s %s", l.Label(), l.Mode, datapath.FormatSize(l.Size))
	}, Trial: func(seq int, sl Slot) (Trial, error) {
		if o.SetOverlay != nil && (sl.Lane.Path == VXLAN) != vxlanOn && (sl.Lane.Path == VXLAN || sl.Lane.Path == PodCrossNode) {
			if err := o.SetOverlay(!vxlanOn); err != nil {
				return Trial{}, fmt.Errorf("switching the lab's overlay: %w", err)
			}
			vxlanOn = !vxlanOn
		}
		want := sl.Lane.MTU
		if want > 0 && sl.Lane.Path == HostCrossNode {
			want -= o.UnderlayOverhead
		}
		if want > 0 && want != mtu {
			mtu = -1 // a switch that fails half-way leaves the network mixed: set it back at the end
			if err := o.SetPodMTU(want); err != nil {
				return Trial{}, fmt.Errorf("setting the lab's pod MTU: %w", err)
			}
			mtu = want
		}
		t := runTrial(ctx, o, e, sl)
		switch {
		case sl.Lane.Path.PodNetwork():
			t.PathMTU = mtu
		case sl.Lane.Path == HostCrossNode:
			t.PathMTU = routeMTU(e.endpointOf(HostCrossNode).addr)
		default:
			t.PathMTU = loopMTU
		}
		t.Seq = seq
		return t, nil
	}}.Run(ctx)
	rep.Trials, rep.Cancelled = trials, datapath.Cancelled(ctx, err)
	return finish(rep, err)
}

// finish completes the report with the comparisons of what was measured.
func finish(rep Report, err error) (Report, error) {
	rep.Finished()
	rep.Ratios = Compare(rep.Trials, rep.Baseline)
	baseOf := baselines(rep.Trials, rep.Baseline)
	rep.Baselines = map[string]string{}
	for _, l := range rep.Lanes {
		if l.Path != Host || l.Copy > 1 {
			rep.Baselines[l.Label()] = baseOf(l)
		}
	}
	return rep, err
}

// loopbackMTU is the MTU of this machine's loopback, which the host path and a hostNetwork pod's run over
// (0 when unreadable).
func loopbackMTU() int {
	n, _ := kernel.LinkMTU(kernel.HostSys, "lo")
	return n
}

// toolsOnMachine checks that the host path's programs are installed.
func toolsOnMachine() error {
	var missing []string
	for _, t := range Tools {
		if _, err := exec.LookPath(t); err != nil {
			missing = append(missing, t)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("the host path runs %s on this machine and they are not installed: apt-get install %s (or tare lab install --datapath)",
			strings.Join(missing, " and "), strings.Join(missing, " "))
	}
	return nil
}

// runTrial runs the lane's client while the session measures the steady part of its run, and parses what
// the tool reports. The window starts once the load has: iperf3 at once, sockperf when it prints that its
// test starts (after about 2 s of warm-up, which its own figures leave out too); then it skips a margin
// (client start through exec, connection set-up, sockperf's first 400 ms) and stops a margin before the
// end (tear-down).
func runTrial(ctx context.Context, o Options, e *endpoints, sl Slot) Trial {
	t := Trial{Slot: sl, Groups: map[string]float64{}}
	ep := e.endpointOf(sl.Lane.Path)
	prog := o.CRR.Host
	if ep.pod != "" {
		prog = o.CRR.Pod
	}
	argv := clientCommand(sl.Lane, ep, prog, o.Duration, o.Parallel)
	head, tail := min(o.Duration/5, time.Second), min(o.Duration/5, time.Second)
	marker := ""
	if sl.Lane.Mode == TCPRR {
		marker, head = sockperfStarts, max(head, sockperfWarmup)
	}
	sopts := o.Session
	sopts.Duration = o.Duration - head - tail
	// Opening the sampler takes a while (its sources, a first pass over every process): before the client
	// starts, so that the window lies inside the client's run.
	ses, err := session.Open(ctx, sopts)
	if err != nil {
		t.Error = fmt.Sprintf("measuring: %v", err)
		return t
	}
	defer ses.Close()
	stdout, stderr := newWatch(marker), newWatch("")
	done := make(chan error, 1)
	// The tools stop by themselves (--time); the bound is for an exec stream that stalls.
	cctx, stop := context.WithTimeout(ctx, o.Duration+startWait+30*time.Second)
	defer stop()
	go func() {
		if ep.pod == "" {
			cmd := exec.CommandContext(cctx, argv[0], argv[1:]...)
			cmd.Stdout, cmd.Stderr = stdout, stderr
			done <- cmd.Run()
			return
		}
		done <- o.Exec(cctx, o.Namespace, ep.pod, "iperf3", argv, stdout, stderr)
	}()
	var runErr error
	finished := false
	select {
	case <-ctx.Done():
	case <-stdout.seen:
	case runErr = <-done: // ended before its load started: its output says why
		finished = true
	case <-time.After(startWait):
		stop()
		t.Error = fmt.Sprintf("%s did not start its load within %s (stopped: %v): %s", argv[0], startWait, <-done, datapath.LastLine(stdout.bytes()))
		// In a pod, closing the exec stream does not end the tool: it ends by itself (--time), and the
		// next trial must not find its server busy.
		if ep.pod != "" {
			select {
			case <-ctx.Done():
			case <-time.After(o.Duration + 5*time.Second):
			}
		}
		return t
	}
	if !finished {
		select {
		case <-ctx.Done():
		case <-time.After(head):
		}
		res, err := ses.Run(ctx)
		t.measured(res, err)
		runErr = <-done
	}
	out := stdout.bytes()
	var o2 Outcome
	var perr error
	switch sl.Lane.Mode {
	case TCPRR:
		o2, perr = ParseSockperf(out)
	case TCPCRR:
		o2, perr = ParseCRR(out)
	case StorageRead, StorageWrite:
		o2, perr = ParseCRR(out)
		// The blocks moved: one a transaction, whichever way.
		o2.Bytes = o2.TPS * o2.Seconds * float64(sl.Lane.Size)
		o2.Gbps = o2.TPS * float64(sl.Lane.Size) * 8 / 1e9
	default:
		o2, perr = ParseIperf(out)
	}
	switch {
	case perr != nil && runErr != nil:
		t.Error = fmt.Sprintf("%s: %v: %v %s", argv[0], runErr, perr, datapath.LastLine(stderr.bytes()))
	case perr != nil:
		t.Error = perr.Error()
	case finished:
		t.Error = fmt.Sprintf("%s ended before its load started", argv[0])
	}
	t.Outcome = o2
	if t.Error == "" {
		t.CPUPerUnit = t.perUnit(t.NodeBusy)
	}
	return t
}

// measured fills the trial's CPU from the session's result.
func (t *Trial) measured(res session.Result, err error) {
	u, err := datapath.UsageOf(res, err)
	if err != nil {
		t.Error = err.Error()
		return
	}
	t.Start, t.End, t.NodeBusy, t.Warnings = u.Start, u.End, u.NodeBusy, u.Warnings
	maps.Copy(t.Groups, u.Groups)
}

// sockperf prints this line when its measured test begins, after its warm-up stage; the first 400 ms of
// the test it leaves out of its own figures too.
const (
	startWait      = 30 * time.Second // for the client to start its load: exec, connecting, sockperf's warm-up
	sockperfStarts = "Starting test"
	sockperfWarmup = 450 * time.Millisecond
)

// watch keeps what a tool writes and closes seen when a line holding marker has been written (at once
// when marker is empty).
type watch struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	marker string
	seen   chan struct{}
	closed bool
}

func newWatch(marker string) *watch {
	w := &watch{marker: marker, seen: make(chan struct{})}
	if marker == "" {
		w.closed = true
		close(w.seen)
	}
	return w
}

func (w *watch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if !w.closed && bytes.Contains(w.buf.Bytes(), []byte(w.marker)) {
		w.closed = true
		close(w.seen)
	}
	return len(p), nil
}

func (w *watch) bytes() []byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	return bytes.Clone(w.buf.Bytes())
}

// line is a trial's one-line summary for the progress output.
func (t Trial) line() string {
	if t.Error != "" {
		return "failed: " + t.Error
	}
	if t.Lane.Mode.Stream() {
		return fmt.Sprintf("%.2f Gbit/s, node busy %.0fm, %.3f CPU-s per Gbit", t.Gbps, t.NodeBusy, t.CPUPerUnit)
	}
	if t.Failed > 0 {
		return fmt.Sprintf("p50 %.1f µs, p99 %.1f µs, %.0f/s, %d failed (%s), node busy %.0fm", t.P50us, t.P99us, t.TPS, t.Failed, t.FailedWhy, t.NodeBusy)
	}
	return fmt.Sprintf("p50 %.1f µs, p99 %.1f µs, %.0f/s, node busy %.0fm", t.P50us, t.P99us, t.TPS, t.NodeBusy)
}
