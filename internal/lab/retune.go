package lab

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tare-dev/tare/internal/component"
)

// ErrRetuneUnsupported says Retune cannot restart one of the components alone (its restart reaches
// further: etcd's and the API server's clients, the kubelet's pods, an extra node's agents); Down and Up can.
var ErrRetuneUnsupported = errors.New("cannot be restarted alone")

// RetuneReport says what Retune restarted and how long it took.
type RetuneReport struct {
	Restarted []string      `json:"restarted"`
	Took      time.Duration `json:"took_ns"`
}

// retunable are the components Retune restarts alone: they hold no state of their own (the API server
// keeps it), nothing waits on them, and their health endpoints say when they are back.
var retunable = []string{component.ControllerManager, component.Scheduler, component.KubeProxy}

// CanRetune says whether Retune can restart every one of the components named alone (and there is one).
func CanRetune(names []string) bool {
	return len(names) > 0 && !slices.ContainsFunc(names, func(n string) bool { return !slices.Contains(retunable, n) })
}

// Retune brings a running lab to its profile's tunings plus sets by restarting only the components whose
// flags change, and those named in also even when unchanged (an experiment restarts the components its
// variants vary in every trial, so that every trial is as fresh as every other). It waits until each is
// healthy again (the controller manager and the scheduler with their leases dropped, so that they lead at
// once); the lab's state records the new processes and tunings. A component it cannot restart alone is
// ErrRetuneUnsupported, with nothing changed.
func Retune(ctx context.Context, dir string, sets []Tuning, also []string) (*RetuneReport, error) {
	start := time.Now()
	st, err := LoadState(dir)
	if err != nil {
		return nil, err
	}
	if err := st.Whole(dir); err != nil {
		return nil, err
	}
	tunings, err := ProfileTunings(st.Profile)
	if err != nil {
		return nil, err
	}
	tunings = append(tunings, sets...)
	restart := retuned(st.Tunings, tunings, also)
	for _, name := range restart {
		if !slices.Contains(retunable, name) || (name == component.KubeProxy && len(st.ExtraNodes) > 0) {
			return nil, fmt.Errorf("%s %w (its flags change)", name, ErrRetuneUnsupported)
		}
		if _, ok := st.Process(name); !ok {
			return nil, fmt.Errorf("%s: the lab does not run it", name)
		}
	}
	r := &RetuneReport{Restarted: restart}
	if len(restart) == 0 {
		st.Tunings = tunings
		r.Took = time.Since(start)
		return r, st.save()
	}
	l, err := resume(st)
	if err != nil {
		return nil, err
	}
	// Stop them all first: a new controller manager must not meet the old one's lease.
	var old []Process
	for _, p := range st.Processes {
		if slices.Contains(restart, p.Name) {
			old = append(old, p)
		}
	}
	stopAll(old, 15*time.Second)
	st.Processes = slices.DeleteFunc(st.Processes, func(p Process) bool { return slices.Contains(restart, p.Name) })
	st.Tunings = tunings
	if err := st.save(); err != nil {
		return nil, err
	}
	if err := l.dropLeases(ctx, restart); err != nil {
		return nil, err
	}
	for _, name := range restart {
		if _, err := l.launch(name, l.args(name), tunings); err != nil {
			return nil, err
		}
	}
	for _, name := range restart {
		if err := l.waitFor(ctx, name, 60*time.Second, l.healthy(name)); err != nil {
			return nil, err
		}
	}
	r.Took = time.Since(start)
	return r, nil
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
	l := &lab{opts: UpOptions{Dir: st.Dir, Profile: st.Profile, ControlPlaneOnly: st.ControlOnly, KwokNodes: st.KwokNodes},
		st: st, p: paths{st.Dir}, bin: binaries{paths: map[string]string{}}, start: time.Now()}
	l.last = l.start
	for _, p := range st.Processes {
		if p.Node == "" && len(p.Args) > 0 {
			l.bin.paths[p.Name] = p.Args[0] // the program it runs now, wherever Up found it
		}
	}
	pki, err := LoadPKI(l.p.pki())
	if err != nil {
		return nil, fmt.Errorf("the lab's certificates: %w", err)
	}
	l.pki = pki
	return l, nil
}

// args are a retunable component's flags before tunings (Up and Retune start them with these).
func (l *lab) args(name string) []string {
	switch name {
	case component.ControllerManager:
		return controllerManagerArgs(l.p, l.pki)
	case component.Scheduler:
		return schedulerArgs(l.p)
	default: // kube-proxy
		return kubeProxyArgs(l.p, l.st.Node)
	}
}

// healthy is a retunable component's health check (Up and Retune wait for it).
func (l *lab) healthy(name string) func(context.Context) error {
	insecure := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} // #nosec G402 -- self-signed healthz
	switch name {
	case component.ControllerManager:
		return httpOK(insecure, "https://127.0.0.1:"+strconv.Itoa(kcmPort)+"/healthz")
	case component.Scheduler:
		return httpOK(insecure, "https://127.0.0.1:"+strconv.Itoa(schedulerPort)+"/healthz")
	default:
		return httpOK(http.DefaultClient, "http://127.0.0.1:"+strconv.Itoa(proxyHealthz)+"/healthz")
	}
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
