package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/tare-dev/tare/internal/lab"
)

type labUpOptions struct {
	profile     string
	sets        []string
	audit       bool
	kwokNodes   int
	nodes       int
	controlOnly bool
	binDir      string
	portOffset  int
}

func newLabUp(s streams, g *globalOptions, dir *string) *cobra.Command {
	var o labUpOptions
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Start the lab and wait until the API is ready, the node is Ready and a probe pod runs",
		Long: `Start a lab: PKI and kubeconfigs, etcd, kube-apiserver, kube-controller-manager, kube-scheduler,
containerd, kubelet and kube-proxy (and kwok with --kwok-nodes). up returns when /readyz is ok, every
node is Ready, a probe pod has run and kube-proxy is healthy, and prints the time each step took and the
KUBECONFIG to use. It then adds the lab to your kubeconfig as kubectl config set-context would ($KUBECONFIG,
else ~/.kube/config; the context tare-lab, or tare-lab-NAME for another --dir) and makes it current, so
kubectl and tare's verbs use the lab with no flags; lab down removes it and makes the previous context
current again. A kubeconfig that cannot be written is a warning: the lab runs, reached with the KUBECONFIG
printed.
pprof is on for every component (etcd --enable-pprof; /debug/pprof on the others).

Profiles: upstream keeps every upstream default; tuned applies single-node reductions, each printed with
its reason. --set COMPONENT.FLAG=VALUE changes any flag of etcd, kube-apiserver, kube-controller-manager,
kube-scheduler, kubelet, kube-proxy or kwok (applied after the profile). --audit writes the API server's
audit log at Metadata level as JSON.

A directory kept by "down --keep" starts warm (same data and certificates). Without root, or with
--control-plane-only, there is no containerd, kubelet or kube-proxy and pods run on kwok nodes.

--nodes N (root) runs N real nodes: node 1 is the machine itself; nodes 2..N (tare-node-2, ...) are each
a network namespace with its own containerd, kubelet and kube-proxy, on a host bridge tare-nodes
(10.250.0.0/24), with pod range 10.244.(N-1).0/24 routed through the machine, so pods on different nodes
reach each other and a Service spans nodes. down removes the namespaces, links and routes.

--port-offset N moves every port a control-plane-only lab listens on (etcd 12379 and 12380, the API
server 6443, the controller manager 10257, the scheduler 10259) by N, so that it runs beside another lab
(give each its own --dir, and offsets a multiple of 100 apart).`,
		Example: `  sudo tare lab up
  sudo tare lab up --profile tuned --audit
  sudo tare lab up --set kube-apiserver.max-requests-inflight=100 --set kubelet.v=2
  sudo tare lab up --nodes 3             # three real nodes on this machine
  tare lab up --kwok-nodes 50            # without root: control plane and 50 fake nodes
  tare lab up --control-plane-only --dir /tmp/lab2 --port-offset 100   # a second lab beside the first`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runLabUp(cmd.Context(), s, g, *dir, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.profile, "profile", lab.ProfileUpstream, "upstream or tuned")
	f.StringArrayVar(&o.sets, "set", nil, "COMPONENT.FLAG=VALUE to pass to a component (repeatable)")
	f.BoolVar(&o.audit, "audit", false, "write the API server's audit log (Metadata level, JSON)")
	f.IntVar(&o.kwokNodes, "kwok-nodes", 0, "fake nodes served by kwok")
	f.IntVar(&o.nodes, "nodes", 1, "real nodes (root): the machine, then one network namespace per further node")
	f.BoolVar(&o.controlOnly, "control-plane-only", false, "no containerd, kubelet or kube-proxy (the default without root)")
	f.StringVar(&o.binDir, "bin-dir", "", "use the Kubernetes binaries in this directory")
	f.IntVar(&o.portOffset, "port-offset", 0, "move every port the lab listens on by N, to run it beside another lab (control-plane-only labs)")
	return cmd
}

func runLabUp(ctx context.Context, s streams, g *globalOptions, dir string, o labUpOptions) error {
	opts := lab.UpOptions{Dir: dir, Profile: o.profile, Audit: o.audit, KwokNodes: o.kwokNodes,
		ControlPlaneOnly: o.controlOnly || os.Geteuid() != 0, BinDir: o.binDir, Nodes: o.nodes, PortOffset: o.portOffset}
	if _, err := lab.ProfileTunings(o.profile); err != nil {
		return usageError("%w", err)
	}
	if o.kwokNodes < 0 {
		return usageError("--kwok-nodes %d: want 0 or more", o.kwokNodes)
	}
	if o.nodes < 1 || o.nodes > lab.MaxNodes {
		return usageError("--nodes %d: want 1 to %d", o.nodes, lab.MaxNodes)
	}
	if o.nodes > 1 && (o.controlOnly || os.Geteuid() != 0) {
		return usageError("--nodes %d needs root and a lab with nodes (not --control-plane-only)", o.nodes)
	}
	if err := opts.CheckPortOffset(); err != nil {
		return usageError("%w", err)
	}
	sets, err := parseSets(o.sets)
	if err != nil {
		return err
	}
	opts.Sets = sets
	if os.Geteuid() != 0 && !o.controlOnly {
		fmt.Fprintln(s.err, "not root: starting a control-plane-only lab (etcd, kube-apiserver, controller-manager, scheduler) with kwok nodes; containerd, kubelet and kube-proxy need root")
	}
	opts.Progress = func(st lab.Step) {
		fmt.Fprintf(s.err, "%8s  %s\n", st.At.Round(time.Millisecond), st.Name)
	}
	st, err := lab.Up(ctx, opts)
	if err != nil {
		return fmt.Errorf("lab up: %w", err)
	}
	// As kind and minikube: kubectl, and tare's verbs, use the lab with no flags. An unwritable kubeconfig
	// does not stop the lab: it runs on, reached with its own kubeconfig (or, by tare, as the lab).
	l, err := lab.Open(st.Dir)
	if err == nil {
		st.UserContext, err = l.AddUserContext()
	}
	if err != nil {
		fmt.Fprintf(s.err, "warning: the lab's context is not in your kubeconfig (%v): use export KUBECONFIG=%s (tare's verbs use the lab when they find no kubeconfig)\n", err, st.Kubeconfig)
	}
	return render(s, g, viewOf(st, printUp))
}

// parseSets parses the --set COMPONENT.FLAG=VALUE flags of lab up and lab retune; a bad one is a usage error.
func parseSets(sets []string) ([]lab.Tuning, error) {
	var out []lab.Tuning
	for _, set := range sets {
		t, err := lab.ParseSet(set)
		if err != nil {
			return nil, usageError("%w", err)
		}
		out = append(out, t)
	}
	return out, nil
}

// printSteps is the table of a lab's up or retune steps: what ended, how long it took, and when.
func printSteps(w io.Writer, steps []lab.Step) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "STEP\tTOOK\tAT")
	for _, step := range steps {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", step.Name, step.Took.Round(time.Millisecond), step.At.Round(time.Millisecond))
	}
	return tw.Flush()
}

func printUp(w io.Writer, st *lab.State) error {
	if err := printSteps(w, st.Steps); err != nil {
		return err
	}
	var took time.Duration
	if len(st.Steps) > 0 {
		took = st.Steps[len(st.Steps)-1].At
	}
	fmt.Fprintf(w, "\nlab up in %s (profile %s", took.Round(time.Millisecond), st.Profile)
	if st.ControlOnly {
		fmt.Fprint(w, ", control plane only")
	}
	if len(st.ExtraNodes) > 0 {
		fmt.Fprintf(w, ", %d nodes", len(st.ExtraNodes)+1)
	}
	if st.KwokNodes > 0 {
		fmt.Fprintf(w, ", %d kwok nodes", st.KwokNodes)
	}
	fmt.Fprintln(w, ")")
	for _, t := range st.Tunings {
		fmt.Fprintf(w, "  %s\n      %s\n", t, t.Reason)
	}
	if st.Audit != "" {
		fmt.Fprintf(w, "audit log: %s\n", st.Audit)
	}
	if uc := st.UserContext; uc != nil {
		var files []string
		for _, f := range uc.Files {
			files = append(files, f.Path)
		}
		was := "none was"
		if uc.Previous != "" {
			was = "was " + uc.Previous
		}
		fmt.Fprintf(w, "kubeconfig %s: context %s added and made current (%s); lab down removes it\n", strings.Join(files, string(filepath.ListSeparator)), uc.Name, was)
	}
	_, err := fmt.Fprintf(w, "export KUBECONFIG=%s\n", st.Kubeconfig)
	return err
}
