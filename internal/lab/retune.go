package lab

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tare-dev/tare/internal/component"
)

// ErrRetuneUnsupported says Retune cannot restart one of the components alone (kwok; kube-proxy in a lab
// with extra nodes); Down and Up can.
var ErrRetuneUnsupported = errors.New("cannot be restarted alone")

// RetuneReport says what Retune restarted, when each stage ended and how long it took in all.
type RetuneReport struct {
	Restarted []string      `json:"restarted"`
	Steps     []Step        `json:"steps,omitempty"` // At counts from the start of Retune
	Took      time.Duration `json:"took_ns"`
}

// retunable are the components Retune restarts alone, in the registry's order, which is the order it
// starts them in: etcd with the API server, each other one after what it talks to is healthy. etcd keeps
// its data directory, so the cluster's objects survive its restart; the API server's clients (the
// controller manager, the scheduler, the kubelet, kube-proxy, kwok) ride out its restart, or etcd's, by
// their own retries: the API server is back within their lease's renew deadline (10 s), and Retune checks
// them all afterwards. A kubelet's restart keeps its pods running: containerd holds them, and the new
// kubelet adopts them without restarting a container.
//
// kwok is not retunable: its fake nodes' leases and pods are driven by the running kwok alone, and its
// restart has not been checked against them; an experiment that varies a kwok flag starts a lab per
// trial. kube-proxy is not retunable in a lab with extra nodes (Retune says so): theirs serves its health
// check inside the node's network namespace, out of reach, so nothing would say when it is back.
var retunable = component.Names(func(e component.Entry) bool { return e.Lab.Tunable && e.Role != component.RoleSimulator })

// CanRetune says whether Retune can restart every one of the components named alone (and there is one),
// in a lab of one node.
func CanRetune(names []string) bool {
	return len(names) > 0 && !slices.ContainsFunc(names, func(n string) bool { return !slices.Contains(retunable, n) })
}

// Retune brings a running lab to its profile's tunings plus sets by restarting only the components whose
// flags change, and those named in also even when unchanged (an experiment restarts the components its
// variants vary in every trial, so that every trial is as fresh as every other). A node component's flag
// applies to every node, as at up: a kubelet flag restarts every node's kubelet. Retune stops the
// components, starts them again in the registry's order, etcd and the API server together (the API server
// retries its storage), each other one once what it talks to is healthy (etcd healthy, the API server's
// /readyz ok, the controller manager and the scheduler with their leases dropped so that they lead at
// once, each node Ready again with a heartbeat from its new kubelet), and after a restart of etcd or the
// API server checks that every other component is alive and healthy. The lab's state records the new
// processes and tunings. A component it cannot restart alone is ErrRetuneUnsupported, with nothing
// changed.
func (l *Lab) Retune(ctx context.Context, sets []Tuning, also []string) (*RetuneReport, error) {
	start := time.Now()
	st, err := l.fresh()
	if err != nil {
		return nil, err
	}
	dir := st.Dir
	if err := st.Whole(dir); err != nil {
		return nil, err
	}
	tunings, err := ProfileTunings(st.Profile)
	if err != nil {
		return nil, err
	}
	tunings = append(tunings, sets...)
	restart := retuned(st.Tunings, tunings, also)
	if err := st.canRetune(restart); err != nil {
		return nil, err
	}
	r := &RetuneReport{Restarted: restart}
	if len(restart) == 0 {
		st.Tunings = tunings
		r.Took = time.Since(start)
		return r, st.save()
	}
	run, err := resume(st)
	if err != nil {
		return nil, err
	}
	run.start = start
	mark := func(name string) {
		now := time.Now()
		s := Step{Name: name, At: now.Sub(start), Took: now.Sub(run.last)}
		run.last = now
		r.Steps = append(r.Steps, s)
	}
	// Stop them all first (every node's, for a node's component): a new controller manager must not meet
	// the old one's lease, nor a new kubelet the old one's node status. The API server is the exception: on
	// SIGTERM it stops listening once its pre-shutdown hooks are done (tens of milliseconds while etcd
	// serves), and its successor starts as soon as the port is free while it ends the requests it was
	// serving (two API servers on one etcd are an HA control plane's normal state). etcd stops once the old
	// API server has stopped listening: without its storage, the API server's own stop (it removes its
	// address from the kubernetes Service's endpoints in etcd first) holds its port until its grace runs out.
	var old, api, storage []Process
	for _, p := range st.Processes {
		switch {
		case !slices.Contains(restart, p.Name):
		case p.Name == component.APIServer:
			api = append(api, p)
		case p.Name == component.Etcd:
			storage = append(storage, p)
		default:
			old = append(old, p)
		}
	}
	draining := make(chan struct{})
	go func() { defer close(draining); stopEach(api, retuneGrace) }()
	defer func() { <-draining }()
	stopEach(old, retuneGrace)
	if len(api) > 0 {
		ports := st.ports().of([]string{component.APIServer})
		free := func(context.Context) error { return portsFree(ports) }
		if err := run.waitFor(ctx, "the stopped kube-apiserver's port", retuneGrace(api[0])+5*time.Second, free); err != nil {
			return nil, err
		}
	}
	stopEach(storage, retuneGrace)
	st.Processes = slices.DeleteFunc(st.Processes, func(p Process) bool { return slices.Contains(restart, p.Name) })
	st.Tunings = tunings
	if err := st.save(); err != nil {
		return nil, err
	}
	mark("stopped " + strings.Join(restart, ", "))
	if err := run.relaunch(ctx, restart, tunings, time.Now(), mark); err != nil {
		return nil, err
	}
	<-draining // the old API server gone too
	r.Took = time.Since(start)
	return r, nil
}

// retuneGrace is how long Retune lets a component stop on SIGTERM before SIGKILL. The API server stops
// listening once its pre-shutdown hooks are done (they write to etcd), then waits for its clients' open
// watches to end, up to its request timeout (60 s; at down its clients are stopped first): meanwhile the controller manager and the scheduler cannot renew their
// leases, and they exit when they have not for 10 s. It keeps nothing of its own (etcd holds the cluster,
// its audit log is written as it goes), so it gets half a second, ample for the requests it was serving to
// end. The others exit within a second of SIGTERM.
func retuneGrace(p Process) time.Duration {
	if p.Name == component.APIServer {
		return 500 * time.Millisecond
	}
	return 15 * time.Second
}

// canRetune says why Retune cannot restart the components named in this lab: one not retunable, or one
// it does not run.
func (s *State) canRetune(names []string) error {
	for _, name := range names {
		if !slices.Contains(retunable, name) {
			return fmt.Errorf("%s %w (its flags change): tare lab down, then up with the flags", name, ErrRetuneUnsupported)
		}
		if name == component.KubeProxy && len(s.ExtraNodes) > 0 {
			return fmt.Errorf("%s %w in a lab with extra nodes (theirs serve their health check inside the node's network namespace): tare lab down, then up with the flags",
				name, ErrRetuneUnsupported)
		}
		if _, ok := s.Process(name); !ok {
			return fmt.Errorf("%s: the lab does not run it", name)
		}
	}
	return nil
}

// relaunch starts the stopped components names again, in the registry's order: etcd and the API server
// together, each waited for; then the API server's clients, their leases dropped first, each waited for
// (a kubelet until its node is Ready with a heartbeat at or after since). After a restart of etcd or the API server
// it waits for the API server and the components it did not restart: every one alive and healthy.
func (l *lab) relaunch(ctx context.Context, names []string, tunings []Tuning, since time.Time, mark func(string)) error {
	core := slices.ContainsFunc(names, func(n string) bool { return n == component.Etcd || n == component.APIServer })
	// etcd and the API server start together, as at up: the API server retries its storage until etcd
	// serves, and its own start (flags, certificates, admission plugins) overlaps etcd's election.
	var storage []string
	for _, name := range []string{component.Etcd, component.APIServer} {
		if slices.Contains(names, name) {
			if err := l.launchEverywhere(name, tunings); err != nil {
				return err
			}
			storage = append(storage, name)
		}
	}
	for _, name := range storage {
		if err := l.waitFor(ctx, name, 60*time.Second, l.healthy(name)); err != nil {
			return err
		}
		mark(name + " healthy")
	}
	if core && !slices.Contains(names, component.APIServer) {
		if err := l.waitFor(ctx, component.APIServer, 60*time.Second, l.healthy(component.APIServer)); err != nil {
			return err
		}
		mark(component.APIServer + " ready again")
	}
	clients := slices.DeleteFunc(slices.Clone(names), func(n string) bool { return n == component.Etcd || n == component.APIServer })
	if len(clients) > 0 {
		if err := l.dropLeases(ctx, clients); err != nil {
			return err
		}
		for _, name := range clients {
			if err := l.launchEverywhere(name, tunings); err != nil {
				return err
			}
		}
		for _, name := range clients {
			if err := l.waitFor(ctx, name, 60*time.Second, l.ready(name, since)); err != nil {
				return err
			}
			mark(name + " healthy")
		}
	}
	if !core {
		return nil
	}
	return l.checkKept(ctx, names, mark)
}

// checkKept waits until every component of the lab Retune did not restart that talks to the API server is
// healthy again (after etcd's or the API server's restart), and fails if any has died meanwhile.
func (l *lab) checkKept(ctx context.Context, restarted []string, mark func(string)) error {
	var kept []string
	for _, p := range l.st.Processes {
		if slices.Contains(restarted, p.Name) || p.Name == component.Etcd || p.Name == component.APIServer {
			continue
		}
		if !alive(p) {
			return fmt.Errorf("%s (pid %d) exited while %s restarted: see %s; tare lab down, then up", p.Name, p.PID, strings.Join(restarted, " and "), p.Log)
		}
		if slices.Contains(retunable, p.Name) && !slices.Contains(kept, p.Name) {
			kept = append(kept, p.Name)
		}
	}
	for _, name := range kept {
		if err := l.waitFor(ctx, name, 60*time.Second, l.ready(name, time.Time{})); err != nil {
			return fmt.Errorf("%s after %s restarted: %w", name, strings.Join(restarted, " and "), err)
		}
	}
	if len(kept) > 0 {
		mark("kept " + strings.Join(kept, ", ") + ": healthy")
	}
	return nil
}

// launchEverywhere starts a component with its tunings: on node 1 or the control plane, and a node's
// component on every extra node too.
func (l *lab) launchEverywhere(name string, tunings []Tuning) error {
	if _, err := l.launch(name, l.args(name), tunings); err != nil {
		return err
	}
	if !labOf(name).Node {
		return nil
	}
	for _, n := range l.st.ExtraNodes {
		if _, err := l.launchOn(&n, name, l.nodeArgs(name, n), tunings); err != nil {
			return err
		}
	}
	return nil
}

// ready is healthy, and for the kubelet: every node Ready with a heartbeat at or after since.
func (l *lab) ready(name string, since time.Time) func(context.Context) error {
	if name != component.Kubelet {
		return l.healthy(name)
	}
	return func(ctx context.Context) error {
		if err := l.healthy(name)(ctx); err != nil {
			return err
		}
		c, err := l.client()
		if err != nil {
			return err
		}
		for _, node := range l.st.realNodes() {
			if err := nodeReady(ctx, c, node, since); err != nil {
				return err
			}
		}
		return nil
	}
}

// retuned lists, in the registry's order, the components whose tunings differ between from and to
// (Changed), and those in also.
func retuned(from, to []Tuning, also []string) []string {
	changed := Changed(from, to)
	return component.Names(func(e component.Entry) bool { return slices.Contains(also, e.Name) || slices.Contains(changed, e.Name) })
}

// Changed lists, in the registry's order, the components whose flags differ between two lists of
// tunings (the flags set for it, in order, as the later one wins).
func Changed(from, to []Tuning) []string {
	flags := func(ts []Tuning, name string) string {
		var out []string
		for _, t := range ts {
			if t.Component == name {
				out = append(out, t.Flag+"="+t.Value)
			}
		}
		return strings.Join(out, " ")
	}
	return component.Names(func(e component.Entry) bool { return flags(from, e.Name) != flags(to, e.Name) })
}

// resume is the lab of a running state, for starting components in it again.
func resume(st *State) (*lab, error) {
	l := &lab{opts: UpOptions{Dir: st.Dir, Profile: st.Profile, ControlPlaneOnly: st.ControlOnly, KwokNodes: st.KwokNodes,
		StopWithCaller: st.Caller == os.Getpid()},
		st: st, p: paths{st.Dir}, bin: binaries{paths: map[string]string{}}, start: time.Now()}
	l.last = l.start
	for _, p := range st.Processes {
		switch {
		case len(p.Args) == 0:
		case p.Node == "":
			l.bin.paths[p.Name] = p.Args[0] // the program it runs now, wherever Up found it
		default:
			l.bin.nsenter = p.Args[0] // an extra node's programs run under nsenter
		}
	}
	pki, err := LoadPKI(l.p.pki())
	if err != nil {
		return nil, fmt.Errorf("the lab's certificates: %w", err)
	}
	l.pki = pki
	return l, nil
}

// dropLeases removes the leader-election leases of the components named (those that take one): their
// holders are stopped, and a new one would otherwise wait out the lease before doing anything.
func (l *lab) dropLeases(ctx context.Context, names []string) error {
	c, err := l.client()
	if err != nil {
		return err
	}
	zero := int64(0)
	for _, e := range component.All() {
		if e.Lease == "" || !e.InLab() || !slices.Contains(names, e.Name) {
			continue
		}
		err := c.CoordinationV1().Leases(metav1.NamespaceSystem).Delete(ctx, e.Lease, metav1.DeleteOptions{GracePeriodSeconds: &zero})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("removing the stopped %s's lease: %w", e.Name, err)
		}
	}
	return nil
}
