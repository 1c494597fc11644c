package cli

import (
	"context"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/tare-dev/tare/internal/agent"
	"github.com/tare-dev/tare/internal/kube"
	"github.com/tare-dev/tare/internal/lab"
	"github.com/tare-dev/tare/internal/sample"
	"github.com/tare-dev/tare/internal/summary"
)

type agentOptions struct {
	listen   string
	health   string
	auth     string
	certFile string
	keyFile  string
	clientCA string
	cmdlines bool
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
    longest: --window): every process's PID, program name, group, pod, CPU, memory and disk, and the
    short-lived children by program; their command lines (redacted) only with --serve-cmdlines.
  - GET /healthz: 503 until the first sample, then 200. It reveals nothing else, and is served to anyone
    (also on --health-listen alone, in plain HTTP, for the kubelet's probes).

Who may read them (--auth):
  - none: anyone who reaches the address, in plain HTTP. Only for loopback addresses (127.0.0.1, ::1):
    the default there, as a local tool.
  - kubernetes: TLS (--tls-cert-file and --tls-private-key-file, else a certificate made at start), and
    every path but /healthz only for a caller the API server vouches for: a client certificate signed by
    the cluster's client CA (--client-ca-file, else kube-system/extension-apiserver-authentication), or a
    bearer token (TokenReview); then its right to get the path (SubjectAccessReview, a non-resource
    URL: get /metrics, get /summary). Others get 401 or 403 and nothing else. Answers are cached as the
    kubelet's (2 min, 5 min allowed, 30 s refused) and at most 20 new reviews a second are sent. The
    default beyond loopback. In a pod it uses the pod's ServiceAccount, else --kubeconfig.
The server bounds what callers can take: read, write and idle timeouts, at most a few hundred open
connections, small headers, two /summary builds at once.

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
	f.StringVar(&o.listen, "listen", "127.0.0.1:9847", "address to serve /metrics, /summary and /healthz on (host:port; :9847 for every interface, which needs --auth kubernetes)")
	f.StringVar(&o.health, "health-listen", "", "a second address serving only /healthz, in plain HTTP, for probes (e.g. 127.0.0.1:9848)")
	f.StringVar(&o.auth, "auth", "auto", "who may read /metrics and /summary: kubernetes (TLS, callers checked by the API server), none (anyone: loopback only), auto (none on loopback, else kubernetes)")
	f.StringVar(&o.certFile, "tls-cert-file", "", "serving certificate (PEM) with --auth kubernetes (default: one made at start)")
	f.StringVar(&o.keyFile, "tls-private-key-file", "", "the serving certificate's key (PEM)")
	f.StringVar(&o.clientCA, "client-ca-file", "", "CA of the client certificates accepted with --auth kubernetes (default: the cluster's, from kube-system/extension-apiserver-authentication)")
	f.BoolVar(&o.cmdlines, "serve-cmdlines", false, "serve processes' and children's command lines (redacted) in /summary; without it they are named by program")
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
	case sample.CheckInterval(o.interval) != nil:
		return usageError("%w", sample.CheckInterval(o.interval))
	case o.detail <= 0:
		return usageError("--detail-interval must be positive, got %s (it is rounded up to a multiple of --interval)", o.detail)
	case o.window < 2*o.interval:
		return usageError("--window %s must hold at least two --interval %s samples", o.window, o.interval)
	case o.top < 0:
		return usageError("--top-processes %d: want 0 or more", o.top)
	case o.auth != "auto" && o.auth != "none" && o.auth != "kubernetes":
		return usageError("--auth %q: want kubernetes, none or auto", o.auth)
	}
	loopback, err := loopbackOnly(o.listen)
	if err != nil {
		return usageError("--listen %q: %w", o.listen, err)
	}
	if o.auth == "auto" {
		o.auth = "kubernetes"
		if loopback {
			o.auth = "none"
		}
	}
	if o.auth == "none" && !loopback {
		return usageError("--listen %s reaches beyond this machine: the agent serves every process's name and CPU, so callers must be checked (--auth kubernetes), or listen on 127.0.0.1", o.listen)
	}
	if o.auth == "none" && (o.certFile != "" || o.keyFile != "" || o.clientCA != "") {
		return usageError("--tls-cert-file, --tls-private-key-file and --client-ca-file go with --auth kubernetes")
	}
	return nil
}

// loopbackOnly reports whether host:port names only loopback addresses (127.0.0.0/8, ::1, localhost).
func loopbackOnly(listen string) (bool, error) {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return false, err
	}
	if host == "localhost" {
		return true, nil
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback(), nil
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
	names, nameNote := podNamer(ctx, g.cluster(s, lab.DefaultDir()), node)
	ao := agent.Options{Listen: o.listen, Interval: o.interval, Detail: o.detail, Window: o.window, TopProcesses: o.top,
		Node: node, Version: Version, Log: s.err, BlockIO: o.blockIO,
		// In a pod, the agent's own cgroup names its kubelet's: pods of another kubelet on the same kernel
		// (the nodes of a one-machine cluster) are grouped apart, not counted as this node's.
		Sampler: g.sampleOptions(sample.Options{PodNames: names, PodRoot: sample.OwnPodRoot(g.procRoot, os.Getpid()), NoResources: true})}
	if nameNote != "" {
		ao.Limitations = append(ao.Limitations, nameNote)
	}
	ao.HealthListen, ao.ServeCmdlines = o.health, o.cmdlines
	if o.auth == "kubernetes" {
		access, note, err := agentAccess(ctx, g.cluster(s, lab.DefaultDir()), o)
		if err != nil {
			return err
		}
		if note != "" {
			fmt.Fprintf(s.err, "warning: %s\n", note)
			ao.Limitations = append(ao.Limitations, note)
		}
		ao.Access = access
	}
	return agent.Run(ctx, ao)
}

// agentAccess is what --auth kubernetes needs: the clients of the reviews (the pod's ServiceAccount, else
// --kubeconfig) and the client CA. A client CA that cannot be read is a note, not an error: bearer tokens
// still work.
func agentAccess(ctx context.Context, target kubeTarget, o *agentOptions) (*agent.Access, string, error) {
	c, err := target.client(kube.Options{UserAgent: "tare-agent", Timeout: 15 * time.Second})
	if err != nil {
		return nil, "", fmt.Errorf("--auth kubernetes checks callers with the API server: %w (run in a pod with the manifest's ServiceAccount, pass --kubeconfig, or listen on 127.0.0.1)", err)
	}
	a := &agent.Access{CertFile: o.certFile, KeyFile: o.keyFile}
	if a.Tokens, a.Rights, err = c.Reviews(); err != nil {
		return nil, "", err
	}
	a.ClientCAs, err = c.ClientCAs(ctx, o.clientCA)
	switch {
	case err != nil && o.clientCA != "":
		return nil, "", err
	case err != nil:
		return a, fmt.Sprintf("client certificates are not accepted, bearer tokens are: %v", err), nil
	}
	return a, "", nil
}
