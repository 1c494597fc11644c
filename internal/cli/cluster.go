package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/tare-dev/tare/internal/cluster/agents"
	"github.com/tare-dev/tare/internal/deploy"
	"github.com/tare-dev/tare/internal/htmlreport"
	"github.com/tare-dev/tare/internal/kube"
	"github.com/tare-dev/tare/internal/lab"
)

type clusterOptions struct {
	duration  time.Duration
	namespace string
	selector  string
	port      int
	noWait    bool
	agentCA   string
	html      string
}

// newCluster is `tare cluster`: the view of every node through the tare agents (issue 17).
func newCluster(s streams, g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "See every node of a cluster through its tare agent",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newClusterMeasure(s, g))
	return cmd
}

func newClusterMeasure(s streams, g *globalOptions) *cobra.Command {
	o := &clusterOptions{}
	cmd := &cobra.Command{
		Use:   "measure",
		Short: "Read every node's agent over one window: per-node rows and cluster totals",
		Long: `Find the tare agents (tare agent manifest | kubectl apply -f -) through the API server, read each
node's /summary over the trailing --duration from the agent at its node's address, over TLS, presenting
your own credentials (your kubeconfig's client certificate, token or exec plugin), and print a row per
node and the cluster's totals, in millicores and bytes:
  control plane      etcd, kube-apiserver, the controller managers, the scheduler (k3s as a whole)
  kubelet+runtime    kubelet, kube-proxy and the runtime's daemon (containerd, CRI-O, dockerd)
  pod runtime        what the runtime runs per pod: shims, runc, pause, CNI plugins; PER-POD divides
                     it by the node's running pods: what one more pod costs in the runtime's processes
  add-ons            DNS, network daemons, metrics-server, kwok
  workload pods      the pods' own processes
  kernel threads, other (processes of no component or pod), tare (the agent itself)
  unattributed       node busy no process was credited with
A node whose agent is missing, not Ready or unreachable is listed with what is wrong. Nodes that share
a kernel (a one-machine lab, kind) count their node busy once; pods of another kubelet on the same
kernel are told apart by their cgroup and shown as other nodes' pods.

Agents that started less than --duration ago are waited for, so every node covers the whole window
(--no-wait reads what they have). You need to list nodes and pods, and to get the non-resource URL
/summary, which each agent checks with the API server: the ClusterRole ` + deploy.ClusterReaderRole + ` grants all
three (kubectl create clusterrolebinding NAME --clusterrole ` + deploy.ClusterReaderRole + ` --user YOU). The
agents' serving certificates are their own: pass --agent-ca when they were given one from your CA.` + figuresHelp,
		Example: `  # Deploy the agents, then the cluster over the last 30 s
  tare agent manifest | kubectl apply -f -
  tare cluster measure

  # Ten minutes, as JSON (a nodes list and totals), with an HTML report
  tare cluster measure --duration 10m -o json --html cluster.html`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runClusterMeasure(cmd, s, g, o)
		},
	}
	f := cmd.Flags()
	f.DurationVar(&o.duration, "duration", 30*time.Second, "trailing window read from every agent (at most the agents' --window)")
	f.StringVarP(&o.namespace, "namespace", "n", deploy.DefaultNamespace, "namespace of the agents' pods")
	f.StringVar(&o.selector, "selector", deploy.NameLabel+"="+deploy.Name, "label selector of the agents' pods")
	f.IntVar(&o.port, "port", deploy.DefaultPort, "port the agents serve /summary on")
	f.StringVar(&o.agentCA, "agent-ca", "", "CA that signed the agents' serving certificates (their --tls-cert-file); without it their certificates are not verified")
	f.BoolVar(&o.noWait, "no-wait", false, "do not wait for agents that started less than --duration ago: read what they have")
	htmlFlag(f, &o.html)
	return cmd
}

func runClusterMeasure(cmd *cobra.Command, s streams, g *globalOptions, o *clusterOptions) error {
	switch {
	case o.duration < time.Second:
		return usageError("--duration %s: want a second or more (e.g. 30s)", o.duration)
	case o.port <= 0 || o.port > 65535:
		return usageError("--port %d: want 1-65535", o.port)
	}
	if err := checkHTML(o.html); err != nil {
		return err
	}
	c, err := g.cluster(s, lab.DefaultDir()).client(kube.Options{UserAgent: "tare-cluster", Timeout: 30 * time.Second, QPS: 50, Burst: 100})
	if err != nil {
		return fmt.Errorf("tare cluster measure reads the agents through the API server: %w", err)
	}
	cs, err := c.Clientset()
	if err != nil {
		return err
	}
	hc, err := c.AgentHTTPClient(o.agentCA)
	if err != nil {
		return fmt.Errorf("tare cluster measure reads the agents with your credentials: %w", err)
	}
	v, err := agents.Measure(cmd.Context(), cs, agents.Options{Namespace: o.namespace, Selector: o.selector, Port: o.port, Client: hc,
		Window: o.duration, Wait: !o.noWait, Progress: func(msg string) { fmt.Fprintln(s.err, msg) }})
	if err != nil {
		return fmt.Errorf("with %s: %w", c.Source, err)
	}
	if err := render(s, g, v); err != nil {
		return err
	}
	if o.html == "" {
		return nil
	}
	return writeHTML(s, o.html, htmlreport.Cluster(v, Version))
}
