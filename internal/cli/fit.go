package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tare-dev/tare/internal/density"
	"github.com/tare-dev/tare/internal/fit"
	"github.com/tare-dev/tare/internal/kube"
	"github.com/tare-dev/tare/internal/lab"
)

// newFit is `tare fit`: how many pods of a request fit a node (issue 15).
func newFit(s streams, g *globalOptions) *cobra.Command {
	var request, overhead, runtimeClass, stored, node, allocatable string
	var pods int
	cmd := &cobra.Command{
		Use:   "fit --request cpu=500m,memory=1Gi | --pods N",
		Short: "Count how many pods of a request fit a node, or the largest request that fits N pods",
		Long: `Count, the way the scheduler does, how many pods of --request fit a node: its allocatable (capacity
minus kube-reserved, system-reserved and the eviction threshold, as the kubelet reports it), minus what
the pods already on it request (DaemonSets' shown apart), divided by the request plus each pod's overhead:
--overhead, a RuntimeClass's overhead.podFixed (--runtime-class, as admission adds it to pods that use
it), or the per-pod cost a tare density run measured (--density FILE, its -o json; its node unless
--node). It says which resource binds first; the
node's pod limit counts too. --allocatable FILE counts against a measured allocatable (tare density
--allocatable-out) in place of the one the node's kubelet reports, and says where the node's shape
differs from the one measured. With --pods N it prints the inverse: the largest cpu and memory request
that still fits N pods.` + figuresHelp,
		Example: `  tare fit --request cpu=500m,memory=1Gi
  tare fit --request cpu=250m,memory=512Mi --runtime-class tare-measured --node worker-2
  tare fit --pods 30 --overhead cpu=2m,memory=4Mi
  tare density -o json > density.json && tare fit --request cpu=100m --density density.json
  tare density --allocatable-out m5.large.yaml && tare fit --request cpu=100m --allocatable m5.large.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if request == "" && pods == 0 {
				return usageError("give --request cpu=500m,memory=1Gi, or --pods N for the largest request that fits N")
			}
			if given := countNonEmpty(overhead, runtimeClass, stored); given > 1 {
				return usageError("--overhead, --runtime-class and --density each give the overhead: give one")
			}
			if pods < 0 {
				return usageError("--pods %d: want 1 or more", pods)
			}
			var req, over corev1.ResourceList
			var err error
			if request != "" {
				if req, err = fit.ParseList(request); err != nil {
					return usageError("--request: %w", err)
				}
			}
			if overhead != "" {
				if over, err = fit.ParseList(overhead); err != nil {
					return usageError("--overhead: %w", err)
				}
			}
			if stored != "" {
				var measuredOn string
				if over, measuredOn, err = density.ReadOverhead(stored); err != nil {
					return usageError("--density: %w", err)
				}
				if node == "" {
					node = measuredOn
				}
			}
			var measured *fit.Allocatable
			if allocatable != "" {
				a, err := fit.ReadAllocatable(allocatable)
				if err != nil {
					return usageError("--allocatable: %w", err)
				}
				measured = &a
			}
			c, err := g.cluster(s, lab.DefaultDir()).client(kube.Options{UserAgent: "tare-fit", Timeout: 30 * time.Second})
			if err != nil {
				return fmt.Errorf("tare fit reads the node through the API server: %w", err)
			}
			cs, err := c.Clientset()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			if runtimeClass != "" {
				if over, err = fit.RuntimeClassOverhead(ctx, cs, runtimeClass); err != nil {
					return err
				}
			}
			n, err := fit.ReadNode(ctx, cs, node)
			if err != nil {
				return fmt.Errorf("with %s: %w", c.Source, err)
			}
			if measured != nil {
				if kn, err := cs.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{}); err == nil {
					for _, w := range measured.Warnings(kn) {
						fmt.Fprintf(s.err, "warning: %s\n", w)
					}
				}
				n = measured.Apply(n)
			}
			out := fit.Output{Result: fit.Result{Node: n, Overhead: over}}
			if req != nil {
				if out.Result, err = fit.Count(n, req, over); err != nil {
					return usageError("--request: %w", err)
				}
			}
			if pods > 0 {
				out.Pods = pods
				if out.Largest, err = fit.Largest(n, pods, over); err != nil {
					return err
				}
			}
			return render(s, g, out)
		},
	}
	f := cmd.Flags()
	f.StringVar(&request, "request", "", "one pod's request, e.g. cpu=500m,memory=1Gi")
	f.StringVar(&overhead, "overhead", "", "per-pod overhead added to the request, e.g. cpu=2m,memory=4Mi (tare density measures it)")
	f.StringVar(&runtimeClass, "runtime-class", "", "take the overhead from this RuntimeClass's overhead.podFixed")
	f.StringVar(&stored, "density", "", "take the overhead (and the node) from a tare density -o json result")
	f.StringVar(&node, "node", "", "the node (default: the cluster's only Ready node that takes pods)")
	f.StringVar(&allocatable, "allocatable", "", "count against this measured allocatable (tare density --allocatable-out's YAML or JSON) instead of the node's")
	f.IntVar(&pods, "pods", 0, "print the largest request that fits this many pods")
	return cmd
}

// countNonEmpty counts the strings that are not empty.
func countNonEmpty(ss ...string) int {
	n := 0
	for _, s := range ss {
		if s != "" {
			n++
		}
	}
	return n
}
