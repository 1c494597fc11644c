package agents

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/tare-dev/tare/internal/bounded"
	"github.com/tare-dev/tare/internal/cluster"
	"github.com/tare-dev/tare/internal/deploy"
	"github.com/tare-dev/tare/internal/kube"
	"github.com/tare-dev/tare/internal/summary"
)

// ErrNoAgents is Measure's error when no node has an agent pod: the agents are not deployed.
var ErrNoAgents = errors.New("no tare agents found: deploy them with `tare agent manifest | kubectl apply -f -` (see tare agent manifest --help)")

// Options say where the agents are and what to ask them.
type Options struct {
	// Namespace and Selector find the agents' pods (the manifest's defaults when empty); Port is where
	// they serve /summary.
	Namespace, Selector string
	Port                int
	// Window is the trailing window asked of every agent.
	Window time.Duration
	// Wait lets agents that have not yet sampled a whole window (just started) fill it: Measure waits
	// for them up to Window and asks again.
	Wait bool
	// Timeout bounds each agent's answer.
	Timeout time.Duration
	// Client reads the agents: over TLS, presenting the caller's own credentials (kube.Client's
	// AgentHTTPClient), which each agent checks with the API server. Required.
	Client *http.Client
	// Progress, when set, is told what Measure waits for.
	Progress func(string)
}

func (o *Options) defaults() {
	if o.Namespace == "" {
		o.Namespace = deploy.DefaultNamespace
	}
	if o.Selector == "" {
		o.Selector = deploy.NameLabel + "=" + deploy.Name
	}
	if o.Port == 0 {
		o.Port = deploy.DefaultPort
	}
	if o.Timeout == 0 {
		o.Timeout = 20 * time.Second
	}
}

// Measure reads every node's agent over the trailing window and builds the view. It fails when the nodes
// or pods cannot be listed (permissions, an unreachable API server) or when no node has an agent; an
// agent that is missing on some nodes, unready or unreachable is a row that says so.
func Measure(ctx context.Context, cs kubernetes.Interface, o Options) (cluster.View, error) {
	o.defaults()
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return cluster.View{}, fmt.Errorf("listing the nodes: %w", err)
	}
	agents, err := cs.CoreV1().Pods(o.Namespace).List(ctx, metav1.ListOptions{LabelSelector: o.Selector})
	if err != nil {
		return cluster.View{}, fmt.Errorf("listing the agents' pods in namespace %s (%s): %w", o.Namespace, o.Selector, err)
	}
	if len(agents.Items) == 0 {
		return cluster.View{}, fmt.Errorf("namespace %s, pods %s: %w", o.Namespace, o.Selector, ErrNoAgents)
	}
	pods, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "status.phase=Running", ResourceVersion: "0"})
	if err != nil {
		return cluster.View{}, fmt.Errorf("listing the running pods: %w", err)
	}
	running := map[string]int{}
	for _, p := range pods.Items {
		running[p.Spec.NodeName]++
	}
	if o.Client == nil {
		return cluster.View{}, errors.New("no client to read the agents with")
	}
	byNode := map[string]*corev1.Pod{}
	for i := range agents.Items {
		p := &agents.Items[i]
		if p.Spec.NodeName == "" || p.DeletionTimestamp != nil {
			continue
		}
		if q := byNode[p.Spec.NodeName]; q == nil || kube.PodReady(p) && !kube.PodReady(q) {
			byNode[p.Spec.NodeName] = p
		}
	}
	addr := map[string]string{} // agent pod → host:port (the node's address: the agents use the host's network)
	in := make([]cluster.Input, len(nodes.Items))
	for i, n := range nodes.Items {
		in[i] = cluster.Input{Node: n.Name, Roles: roles(n.Labels), Pods: running[n.Name]}
		p := byNode[n.Name]
		switch {
		case p == nil:
			in[i].Status, in[i].Reason = cluster.StatusNoAgent, noAgentReason(n, o.Namespace)
		case !kube.PodReady(p):
			in[i].Agent, in[i].Status, in[i].Reason = p.Name, cluster.StatusUnready, unreadyReason(p)
		case p.Status.PodIP == "":
			in[i].Agent, in[i].Status, in[i].Reason = p.Name, cluster.StatusUnready, "the agent's pod has no IP yet"
		default:
			in[i].Agent = p.Name
			addr[p.Name] = net.JoinHostPort(p.Status.PodIP, strconv.Itoa(o.Port))
		}
	}
	taken := time.Now()
	readAll(ctx, o, addr, in, func(x *cluster.Input) bool { return x.Agent != "" && x.Status == "" })
	if o.Wait {
		if wait := shortfall(in, o.Window); wait > 0 {
			if o.Progress != nil {
				o.Progress(fmt.Sprintf("waiting %s for agents that started less than %s ago", wait.Round(time.Second), o.Window))
			}
			select {
			case <-ctx.Done():
				return cluster.View{}, ctx.Err()
			case <-time.After(wait):
			}
			taken = time.Now()
			readAll(ctx, o, addr, in, func(x *cluster.Input) bool {
				return x.Status == cluster.StatusOK || x.Status == cluster.StatusUnready && x.Agent != "" && x.Reason == noSampleReason
			})
		}
	}
	return cluster.Build(o.Window, taken, in), nil
}

// readAll reads /summary of the agents pick selects, in parallel.
func readAll(ctx context.Context, o Options, addr map[string]string, in []cluster.Input, pick func(*cluster.Input) bool) {
	var wg sync.WaitGroup
	for i := range in {
		if !pick(&in[i]) {
			continue
		}
		wg.Add(1)
		go func(x *cluster.Input) {
			defer wg.Done()
			x.Summary, x.Status, x.Reason = readSummary(ctx, o, addr[x.Agent])
		}(&in[i])
	}
	wg.Wait()
}

const noSampleReason = "the agent has taken no sample yet"

// readSummary asks the agent at addr for its summary of the window, over TLS with the caller's credentials.
func readSummary(ctx context.Context, o Options, addr string) (*summary.Summary, cluster.Status, string) {
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	u := url.URL{Scheme: "https", Host: addr, Path: "/summary", RawQuery: url.Values{"window": {o.Window.String()}}.Encode()}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, cluster.StatusUnreachable, err.Error()
	}
	resp, err := o.Client.Do(req)
	if err != nil {
		return nil, cluster.StatusUnreachable, fmt.Sprintf("GET %s: %v", u.String(), err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(bounded.Reader(resp.Body, maxSummary, "the agent's /summary at "+addr))
	if err != nil {
		return nil, cluster.StatusUnreachable, fmt.Sprintf("reading %s: %v", u.String(), err)
	}
	return parseSummary(resp.StatusCode, resp.Status, b, u.String())
}

// parseSummary reads an agent's answer to GET target (its status code, status line and body) the way Measure
// takes it: a summary, or the status of the node's row and a reason that says what to do.
func parseSummary(code int, status string, b []byte, target string) (*summary.Summary, cluster.Status, string) {
	msg := strings.TrimSpace(string(b))
	switch {
	case code == http.StatusOK:
	case code == http.StatusBadRequest:
		return nil, cluster.StatusBadWindow, fmt.Sprintf("%s: ask for a shorter --duration or run the agents with a longer --window", firstLine(msg, errors.New(status)))
	case code == http.StatusServiceUnavailable && strings.Contains(msg, "no sample yet"):
		return nil, cluster.StatusUnready, noSampleReason
	case code == http.StatusUnauthorized:
		return nil, cluster.StatusForbidden, fmt.Sprintf("the agent does not accept your credentials (%s): use a kubeconfig whose user has a token or a client certificate of the cluster", firstLine(msg, errors.New(status)))
	case code == http.StatusForbidden:
		return nil, cluster.StatusForbidden, fmt.Sprintf("%s: you need the ClusterRole %s (kubectl create clusterrolebinding ... --clusterrole %s --user YOU)", firstLine(msg, errors.New(status)), deploy.ClusterReaderRole, deploy.ClusterReaderRole)
	default:
		return nil, cluster.StatusUnreachable, fmt.Sprintf("GET %s: %s", target, firstLine(msg, errors.New(status)))
	}
	var s summary.Summary
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, cluster.StatusUnreachable, fmt.Sprintf("the agent's /summary is not a summary: %v", err)
	}
	return &s, cluster.StatusOK, ""
}

// maxSummary bounds what is read of one agent's answer: a summary of thousands of processes is a few MiB.
const maxSummary = 64 << 20

// firstLine is an error's message, or the body's first line when the body says more.
func firstLine(body string, err error) string {
	if body != "" {
		line, _, _ := strings.Cut(body, "\n")
		return line
	}
	return err.Error()
}

// shortfall is how long to wait until every answering agent covers the window: the longest gap between
// the window and an agent's span (agents that just started), at most the window. Agents with no sample
// yet count as needing a whole window's wait only if nothing else does.
func shortfall(in []cluster.Input, window time.Duration) time.Duration {
	var wait time.Duration
	for _, x := range in {
		switch {
		case x.Status == cluster.StatusOK && x.Summary != nil:
			interval := x.Summary.Meta.Interval
			have := time.Duration(x.Summary.Window.Seconds * float64(time.Second))
			if window-have > interval {
				wait = max(wait, window-have)
			}
		case x.Status == cluster.StatusUnready && x.Reason == noSampleReason:
			wait = max(wait, window)
		}
	}
	return min(wait, window)
}

// unreadyReason says why an agent pod is not Ready: its phase and the first container state that says.
func unreadyReason(p *corev1.Pod) string {
	parts := []string{"agent pod " + p.Name + " is " + string(p.Status.Phase)}
	for _, cs := range p.Status.ContainerStatuses {
		switch {
		case cs.State.Waiting != nil:
			parts = append(parts, fmt.Sprintf("container %s waiting: %s %s", cs.Name, cs.State.Waiting.Reason, cs.State.Waiting.Message))
		case cs.State.Terminated != nil:
			parts = append(parts, fmt.Sprintf("container %s terminated: %s (exit %d)", cs.Name, cs.State.Terminated.Reason, cs.State.Terminated.ExitCode))
		case !cs.Ready:
			parts = append(parts, fmt.Sprintf("container %s not ready (restarts: %d)", cs.Name, cs.RestartCount))
		}
	}
	return strings.TrimSpace(strings.Join(parts, "; ")) + ": see kubectl -n " + p.Namespace + " describe pod " + p.Name
}

// noAgentReason says why a node may have no agent pod.
func noAgentReason(n corev1.Node, namespace string) string {
	var taints []string
	for _, t := range n.Spec.Taints {
		taints = append(taints, t.Key+":"+string(t.Effect))
	}
	r := "no agent pod on this node: the DaemonSet is not scheduled here"
	if len(taints) > 0 {
		sort.Strings(taints)
		r += " (node taints: " + strings.Join(taints, ", ") + "; the manifest tolerates every taint, so check the DaemonSet's node selector)"
	}
	return r + "; see kubectl -n " + namespace + " describe daemonset " + deploy.Name
}

// roles are the node's roles from its node-role.kubernetes.io/ROLE labels.
func roles(labels map[string]string) []string {
	var out []string
	for k := range labels {
		if r, ok := strings.CutPrefix(k, "node-role.kubernetes.io/"); ok && r != "" {
			out = append(out, r)
		}
	}
	sort.Strings(out)
	return out
}
