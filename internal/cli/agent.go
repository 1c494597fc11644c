package cli

import (
	"context"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/tare-dev/tare/internal/agent"
	"github.com/tare-dev/tare/internal/sample"
	"github.com/tare-dev/tare/internal/summary"
)

type agentOptions struct {
	listen   string
	interval time.Duration
	window   time.Duration
	detail   time.Duration
	top      int
	node     string
	blockIO  bool
}

// newAgent is `tare agent`: the long-running mode that samples the node and serves /metrics, /summary and
// /healthz (issue 17). Its subcommand `manifest` prints the DaemonSet that runs it.
func newAgent(s streams, g *globalOptions) *cobra.Command {
	o := &agentOptions{}
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Sample the node continuously and serve /metrics, /summary and /healthz",
		Long: `Sample the node continuously, with the same measuring session as tare measure, and serve over HTTP:
  - GET /metrics: Prometheus (and OpenMetrics) text: node busy and /proc/stat CPU, per group (component,
    pod container, kernel, other, tare itself) CPU, short-lived children's CPU and runs, memory, disk bytes
    and threads, block I/O requests, bytes and device-time histograms (--block-io), the reconciliation gap, the top --top-processes processes by CPU over --window, and the
    agent's own process_* and go_* metrics. Counters are cumulative since the agent started.
  - GET /summary?window=60s: the JSON of tare measure -o json over the trailing window (default and
    longest: --window).
  - GET /healthz: 503 until the first sample, then 200.

` + summary.BusyDefinition + `.

` + agent.DescribeBound() + `

Ctrl-C or SIGTERM shuts the server down gracefully.`,
		Example: `  # Serve on the default address, one sample a second, a ten-minute window
  sudo tare agent

  # From a container: the host's /proc and /sys mounted under /host
  tare agent --listen :9847 --proc-root /host/proc --sys-root /host/sys --host-root /host

  # Scrape it
  curl -s 127.0.0.1:9847/metrics | grep tare_group_cpu_seconds_total
  curl -s '127.0.0.1:9847/summary?window=60s' | jq .reconciliation`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runAgent(cmd.Context(), s, g, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.listen, "listen", "127.0.0.1:9847", "address to serve /metrics, /summary and /healthz on (host:port; :9847 for every interface)")
	f.DurationVar(&o.interval, "interval", time.Second, "time between samples")
	f.DurationVar(&o.window, "window", 10*time.Minute, "samples kept for /summary and for ranking the top processes (window / interval samples)")
	f.DurationVar(&o.detail, "detail-interval", 5*time.Second, "time between memory, disk and thread reads (rounded to a multiple of --interval; at most --window less one --interval)")
	f.BoolVar(&o.blockIO, "block-io", true, "count each group's block I/O requests, bytes and device time with BPF on the block tracepoints (where BPF is allowed; about 25 ms of CPU once, to load)")
	f.IntVar(&o.top, "top-processes", 20, "single processes exported in /metrics: the top N by CPU over --window (0: none)")
	f.StringVar(&o.node, "node", "", "the node's name in tare_agent_info and for naming its pods (default $NODE_NAME, else the host name)")
	cmd.AddCommand(newAgentManifest(s, g), newAgentImage(s, g), newAgentPrometheus(s, g))
	return cmd
}

func (o *agentOptions) validate() error {
	switch {
	case o.interval < 10*time.Millisecond:
		return usageError("--interval %s is below the 10ms floor: the sampler cannot keep up and would measure itself", o.interval)
	case o.window < 2*o.interval:
		return usageError("--window %s must hold at least two --interval %s samples", o.window, o.interval)
	case o.top < 0:
		return usageError("--top-processes %d: want 0 or more", o.top)
	}
	return nil
}

// nodeName is --node, else $NODE_NAME (the downward API's spec.nodeName in the DaemonSet), else the
// measured host's name.
func (o *agentOptions) nodeName(procRoot string) string {
	if o.node != "" {
		return o.node
	}
	if n := os.Getenv("NODE_NAME"); n != "" {
		return n
	}
	return sample.HostName(procRoot)
}

func runAgent(ctx context.Context, s streams, g *globalOptions, o *agentOptions) error {
	if err := o.validate(); err != nil {
		return err
	}
	node := o.nodeName(g.procRoot)
	names, nameNote := podNamer(ctx, g.kubeconfig, node)
	ao := agent.Options{Listen: o.listen, Interval: o.interval, Detail: o.detail, Window: o.window, TopProcesses: o.top,
		Node: node, Version: Version, Log: s.err, BlockIO: o.blockIO,
		// In a pod, the agent's own cgroup names its kubelet's: pods of another kubelet on the same kernel
		// (the nodes of a one-machine cluster) are grouped apart, not counted as this node's.
		Sampler: g.sampleOptions(sample.Options{PodNames: names, PodRoot: sample.OwnPodRoot(g.procRoot, os.Getpid()), NoResources: true})}
	if nameNote != "" {
		ao.Limitations = append(ao.Limitations, nameNote)
	}
	return agent.Run(ctx, ao)
}
