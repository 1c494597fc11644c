package cli

import (
	"io"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/tare-dev/tare/internal/deploy"
	"github.com/tare-dev/tare/internal/sample"
)

// newAgentManifest is `tare agent manifest`: the DaemonSet, ServiceAccount and RBAC that run tare agent on
// every node (issue 17).
func newAgentManifest(s streams, g *globalOptions) *cobra.Command {
	o := &deploy.Options{}
	cmd := &cobra.Command{
		Use:   "manifest",
		Short: "Print the DaemonSet that runs tare agent on every node",
		Long: `Print the Kubernetes objects that run tare agent on every node, control-plane nodes included:
the Namespace (Pod Security level privileged: the narrowest that admits the host's PID and network
namespaces, host paths and the added capabilities), a ServiceAccount, a ClusterRole allowing list and
watch on pods (to name the pods of the agent's node) and create on tokenreviews and
subjectaccessreviews (to check its callers), its ClusterRoleBinding, a RoleBinding in kube-system to
read the cluster's client CA, the readers' ClusterRoles ` + deploy.MetricsReaderRole + ` (get /metrics: bind it to
Prometheus's ServiceAccount) and ` + deploy.ClusterReaderRole + ` (what tare cluster measure needs: bind it to
its users), and the DaemonSet.

The agent's pods share the host's PID and network namespaces (the proc connector, which names
short-lived processes, exists only in the host's), mount the host's /proc, /sys and /boot read-only, get
the node name from the downward API, and run with the capabilities NET_ADMIN, SYS_PTRACE,
DAC_READ_SEARCH, BPF and PERFMON, not privileged, under the runtime's default seccomp profile. They
serve /metrics, /summary and /healthz over TLS on the node's port --port (container port "metrics",
label app.kubernetes.io/name=tare-agent, annotations prometheus.io/scrape, port and scheme): every path
but /healthz only to callers the API server vouches for and allows (see tare agent --help); the
kubelet probes /healthz on the node's 127.0.0.1:--health-port. Requests (cpu 20m, memory 64Mi) and the
memory limit (256Mi, GOMEMLIMIT 192MiB) come from tare's own measured cost; there is no CPU limit.

-o table (the default) prints multi-document YAML; -o json prints one v1 List. Both are read by
kubectl apply -f -. The default image is the one tare lab up imports into the lab's containerd; for
another cluster, write it with tare agent image --out FILE.tar, load or push it, and pass --image.`,
		Example: `  # On the lab
  tare agent manifest | kubectl apply -f -

  # Elsewhere, with the image pushed to your registry
  tare agent manifest --image registry.example.com/tare:v1 --namespace monitoring | kubectl apply -f -`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			switch {
			case o.Port < 1 || o.Port > 65535:
				return usageError("--port %d: want a port from 1 to 65535", o.Port)
			case o.HealthPort < 0 || o.HealthPort > 65535:
				return usageError("--health-port %d: want a port from 1 to 65535 (0: --port + 1)", o.HealthPort)
			case sample.CheckInterval(o.Interval) != nil:
				return usageError("%w", sample.CheckInterval(o.Interval))
			}
			objs, err := deploy.Objects(*o)
			if err != nil {
				return usageError("%w", err)
			}
			return render(s, g, manifestView(objs))
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Namespace, "namespace", deploy.DefaultNamespace, "namespace of the agent's objects (created by the manifest)")
	f.StringVar(&o.Image, "image", deploy.DefaultImage, "the agent's image: the default is the one tare lab up imports")
	f.DurationVar(&o.Interval, "interval", deploy.DefaultInterval, "the agent's sampling interval")
	f.IntVar(&o.Port, "port", deploy.DefaultPort, "the node port the agent serves /metrics, /summary and /healthz on")
	f.IntVar(&o.HealthPort, "health-port", 0, "the port of the node's 127.0.0.1 the kubelet probes /healthz on (default --port + 1)")
	return cmd
}

// manifestView prints objects as YAML (-o table) or as one JSON List (-o json).
type manifestView []runtime.Object

func (m manifestView) Table(w io.Writer) error { return deploy.WriteYAML(w, m) }
func (m manifestView) JSON(w io.Writer) error  { return deploy.WriteJSON(w, m) }
