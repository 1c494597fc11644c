package datapath

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/tare-dev/tare/internal/kube"
	"github.com/tare-dev/tare/internal/session"
	"github.com/tare-dev/tare/internal/summary"
	"github.com/tare-dev/tare/internal/warning"
)

// This file holds what every verb's run shares: its schedule, the trials run in turn (and cut short by
// Ctrl-C), the node's usage over a trial's window, and the pods' nodes.

// Schedule is how a run's trials ran: how many rounds of how long, in the order of which seed, when, for
// how long, and whether Ctrl-C cut the run short. Its fields appear inline in a report's JSON.
type Schedule struct {
	Rounds    int       `json:"rounds"`
	Duration  string    `json:"duration"`
	Seed      uint64    `json:"seed"`
	Started   time.Time `json:"started"`
	Took      string    `json:"took"`
	Cancelled bool      `json:"cancelled,omitempty"`
}

// ScheduleOf starts a run's schedule now.
func ScheduleOf(rounds int, d time.Duration, seed uint64) Schedule {
	return Schedule{Rounds: rounds, Duration: d.String(), Seed: seed, Started: time.Now()}
}

// Finished records how long the run took.
func (s *Schedule) Finished() { s.Took = time.Since(s.Started).Round(time.Second).String() }

// Rounds is how a run goes through its plan: every lane n times, in the order seed gives (Order), each
// slot in turn with trial (seq counts from 1), saying each result: "trial 3/20 (round 1): <its lane's
// name>: <its line>".
type Rounds[L, T any] struct {
	Lanes []L
	N     int
	Seed  uint64
	Trial func(seq int, sl SlotOf[L]) (T, error)
	Name  func(l L) string // the lane as the progress lines name it
	Line  func(t T) string // the trial's result in one line
	Say   func(format string, a ...any)
}

// Run runs the trials. A cancel cuts the trial under way short: its window is not whole, so it is dropped,
// and Run returns the trials before it with ctx's error. An error from trial ends the Run the same way.
func (r Rounds[L, T]) Run(ctx context.Context) ([]T, error) {
	slots := Order(r.Lanes, r.N, rand.New(rand.NewPCG(r.Seed, r.Seed+1)))
	var out []T
	for i, sl := range slots {
		t, err := r.Trial(i+1, sl)
		if err != nil {
			return out, err
		}
		cut := ctx.Err() != nil // before saying anything: a cancel from here on is the next trial's
		r.Say("trial %d/%d (round %d): %s: %s", i+1, len(slots), sl.Round, r.Name(sl.Lane), r.Line(t))
		if cut {
			return out, ctx.Err()
		}
		out = append(out, t)
	}
	return out, nil
}

// Cancelled says whether err is ctx's own: the run was cut short, not failed.
func Cancelled(ctx context.Context, err error) bool {
	return ctx.Err() != nil && errors.Is(err, ctx.Err())
}

// Usage is what the node spent over a trial's measured window, as the measuring session saw it.
type Usage struct {
	Start    time.Time          `json:"start"` // the measured window
	End      time.Time          `json:"end"`
	NodeBusy float64            `json:"node_busy_m"` // millicores: the node's busy time over the window
	Groups   map[string]float64 `json:"groups_m"`    // millicores per group (component, pod, other, …)
	Warnings []session.Warning  `json:"warnings,omitempty"`
}

// UsageOf reads a session's result (res, or the error that ended it) into the window's usage.
func UsageOf(res session.Result, err error) (Usage, error) {
	switch {
	case err != nil:
		return Usage{}, fmt.Errorf("measuring: %w", err)
	case len(res.Samples) < 2:
		return Usage{}, errors.New("the window was cut short before a whole interval")
	}
	sum := summary.Build(res.Meta, res.Samples, summary.Options{})
	u := Usage{Start: sum.Window.Start, NodeBusy: sum.Node.Busy.Mean, Groups: map[string]float64{}}
	u.End = u.Start.Add(time.Duration(sum.Window.Seconds * float64(time.Second)))
	for _, g := range sum.Groups {
		u.Groups[g.Name] += g.CPU.Mean
	}
	u.Warnings = res.Warnings
	return u, nil
}

// Nodes are the Nodes a run's pods go to: the node measured, and a second node for the cross-node
// paths ("" when none).
type Nodes struct{ Node, Remote string }

// RoleLabel is the label that names a datapath pod's role (client, server, the disk pod) and selects the
// Service's servers.
const RoleLabel = "tare.dev/datapath"

// WarnOtherNode marks a run where tare measured a machine other than the node the pods ran on: the CPU figures are not
// the pods' node's.
const WarnOtherNode = "other-node"

// PickNodes chooses the node of the pods (node, else the machine's own node, host, else the only one) and
// a second node for the cross-node paths. When the pods' node is not the machine tare measures, it says
// so and returns the warning (WarnOtherNode).
func PickNodes(ctx context.Context, cs kubernetes.Interface, node, host string, say func(string, ...any)) (Nodes, []warning.Warning, error) {
	var picked Nodes
	all, err := kube.PodNodes(ctx, cs)
	if err != nil {
		return picked, nil, err
	}
	want := node
	if want == "" {
		for _, n := range all {
			if n.Name == host {
				want = n.Name
			}
		}
	}
	if want == "" {
		if len(all) != 1 {
			return picked, nil, fmt.Errorf("%d Ready nodes take pods and none is this machine (%s): give --node", len(all), host)
		}
		want = all[0].Name
	}
	for _, n := range all {
		switch {
		case n.Name == want:
			picked.Node = n.Name
		case picked.Remote == "":
			picked.Remote = n.Name
		}
	}
	if picked.Node == "" {
		return picked, nil, fmt.Errorf("node %q is not a Ready node that takes pods (kubectl get nodes)", want)
	}
	if host == "" || host == picked.Node {
		return picked, nil, nil
	}
	w := warning.Warning{Code: WarnOtherNode, Figure: "cpu_per_unit", Subject: picked.Node,
		Message: fmt.Sprintf("tare measures this machine (%s) and the pods run on node %s: the CPU figures are this machine's", host, picked.Node),
		Cause:   "--node names another node than the one tare runs on"}
	say("warning: %s", w.Message)
	return picked, []warning.Warning{w}, nil
}

// WaitPodsReady waits until every named pod in ns is Ready with an IP, or one cannot start, or the wait
// runs out; it returns their IPs by name.
func WaitPodsReady(ctx context.Context, cs kubernetes.Interface, ns string, names []string, wait time.Duration) (map[string]string, error) {
	ips := map[string]string{}
	deadline := time.Now().Add(wait)
	for _, name := range names {
		for {
			p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return nil, fmt.Errorf("reading pod %s/%s: %w", ns, name, err)
			}
			if err := kube.PodStartFailure(p); err != nil {
				return nil, err
			}
			if p.Status.Phase == corev1.PodFailed {
				return nil, fmt.Errorf("pod %s/%s failed: %s %s", ns, name, p.Status.Reason, p.Status.Message)
			}
			if kube.PodReady(p) && p.Status.PodIP != "" {
				ips[name] = p.Status.PodIP
				break
			}
			if time.Now().After(deadline) {
				return nil, fmt.Errorf("pod %s/%s not ready after %s (phase %s; kubectl describe pod -n %s %s)", ns, name, wait, p.Status.Phase, ns, name)
			}
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(250 * time.Millisecond):
			}
		}
	}
	return ips, nil
}

// LastLine is the last line of a tool's output, trimmed: what an error says of it.
func LastLine(b []byte) string {
	s := strings.TrimSpace(string(b))
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return s
}
