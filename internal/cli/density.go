package cli

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/tare-dev/tare/internal/density"
	"github.com/tare-dev/tare/internal/htmlreport"
	"github.com/tare-dev/tare/internal/kube"
	"github.com/tare-dev/tare/internal/lab"
	"github.com/tare-dev/tare/internal/lab/images"
	"github.com/tare-dev/tare/internal/sample"
	"github.com/tare-dev/tare/internal/session"
	"github.com/tare-dev/tare/internal/userfile"
)

type densityOptions struct {
	kwok         bool
	churn        string
	pods         []int
	trials       int
	window       time.Duration
	settle       time.Duration
	node         string
	namespace    string
	image        string
	pull         string
	runtimeClass string
	handler      string
	seed         uint64
	maxPods      int
	containers   int
	html         string
	percentile   float64
	allocatable  string
}

// newDensity is `tare density`: what one more pod costs the node (issue 15).
func newDensity(s streams, g *globalOptions) *cobra.Command {
	o := &densityOptions{}
	cmd := &cobra.Command{
		Use:   "density",
		Short: "Measure what one more pod costs a node: per-component per-pod CPU and memory, and a RuntimeClass overhead",
		Long: `Step the number of idle pods on one node through --pods, every count once per trial in shuffled order,
wait until they are Running and the node settles, and measure a window at each step, on this machine
(run tare density on the node it fills). Then fit each component's CPU and memory (RSS, PSS, private)
against the pod count with a robust line (Theil–Sen, 95% bootstrap interval of the slope): the cost at
zero pods, the marginal cost per pod and R². Each component says where its processes run: in the pod
cgroups (what kubectl top and cgroup-based tools see) or outside them (containerd's shims, kubelet).

From the per-pod costs outside the pod cgroups of the node's agents, runtime and per-pod runtime
processes, at the upper end of their intervals, it prints a RuntimeClass whose overhead.podFixed charges
them to every pod that uses it (KEP-688). From the same components' CPU and PSS, read at --max-pods
pods (default: the node's pod limit) at the upper end of the line's 95% interval, it recommends a
kube-reserved, beside what the EKS, GKE and AKS formulas reserve for a node of this size. Operators size
reservations for spikes, not means: from the same components' per-second CPU, every second moved to
--max-pods pods by the line's per-pod slope, it also reads kube-reserved at --percentile (default 99) of
1 s demand, with its distribution-free 95% interval (order statistics; an end the seconds measured cannot
bound is printed "unbounded": p99 needs 367 seconds), and system-reserved the same way from the kernel
threads and the machine's processes that are neither Kubernetes's nor pods. With --churn the CPU its pod
starts cost, at its rate, is added to both. Memory is the largest working set outside the pods' cgroup
(usage − inactive_file, what the eviction manager counts), read every second, plus the kubelet's
evictionHard memory.available (from its configz; 100Mi, said, when unreadable): allocatable = capacity −
kube-reserved − system-reserved − eviction. --allocatable-out FILE writes that measured allocatable
for the node's shape (CPU, memory, pods, OS image, kernel, runtime, date, tare version) as YAML, for
tare fit --allocatable and capacity tools.

The pods run in --namespace, created for the run and deleted after it, also on error or Ctrl-C (which
keeps and prints the steps measured so far). --image pause (the default) is the lab's pause image, never
pulled: a pod of only its sandbox. --image busybox-sleep is the lab's image of Debian's static busybox
running "busybox sleep" in each container: a process of its own per container, as real pods have. Any
other image is pulled if missing unless --pull never. A pod that cannot start its image stops
the run with the kubelet's reason. Needs root, like tare measure.

--html FILE also writes a page with each component's CPU and private memory at every step against the
pod count, with the fitted line and its slope's interval, and the tables; a run cut short writes it with
the steps it measured.` + figuresHelp,
		Example: `  # On the lab
  sudo tare density --pods 0,10,20,40 --trials 3 --window 20s

  # With an HTML report of the fits
  sudo tare density --html density.html

  # On a node of another cluster (run it on that node)
  sudo tare density --node worker-3 --image registry.k8s.io/pause:3.10 -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDensity(cmd, s, g, o)
		},
	}
	f := cmd.Flags()
	f.IntSliceVar(&o.pods, "pods", []int{0, 10, 20, 40}, "pod counts to step through, increasing")
	f.IntVar(&o.trials, "trials", 3, "repetitions of every count, each trial in a new shuffled order")
	f.DurationVar(&o.window, "window", 20*time.Second, "measured window at each step")
	f.DurationVar(&o.settle, "settle", 10*time.Second, "wait after the pods are Running before measuring")
	f.StringVar(&o.node, "node", "", "the node to fill (default: the cluster's only node that takes pods)")
	f.StringVarP(&o.namespace, "namespace", "n", "tare-density", "namespace of the run's pods: created for the run and deleted after it")
	f.StringVar(&o.image, "image", "pause", "the idle pods' image; pause is the lab's pause image ("+images.Pause.Name+", never pulled); "+busyboxSleep+" runs `busybox sleep` in each container (the lab's "+images.Busybox.Name+", Debian's static busybox)")
	f.StringVar(&o.pull, "pull", "", "image pull policy: never or if-not-present (default: never for pause, else if-not-present)")
	f.StringVar(&o.runtimeClass, "runtime-class", "tare-measured", "name of the RuntimeClass printed")
	f.StringVar(&o.handler, "handler", "runc", "the RuntimeClass's handler: the CRI runtime handler its pods run with")
	f.Uint64Var(&o.seed, "seed", 0, "seed of the step order and the bootstrap (default: from the clock)")
	f.IntVar(&o.containers, "containers-per-pod", 1, "containers of the image in each pod (a sidecar-heavy pod runs several)")
	f.BoolVar(&o.kwok, "kwok", false, "put the pods on the cluster's kwok nodes (label "+density.KwokLabel+"; tare lab up --kwok-nodes 2): the control plane's cost per 1,000 pods, no container running (default --pods: 0, a quarter, half and all of their pods)")
	f.StringVar(&o.churn, "churn", "", "also measure pods starting and stopping at this rate (pod starts per second, or 30/min): the CPU per pod start of kubelet, runtime, API server, etcd and every other group, apart from the idle cost")
	f.Float64Var(&o.percentile, "percentile", density.DefaultPercentile, "percentile of 1 s demand the kube-reserved and system-reserved CPU are also read at, with its 95% interval (above 0, below 100)")
	f.StringVar(&o.allocatable, "allocatable-out", "", "also write the node shape's measured allocatable (YAML, tare fit --allocatable reads it) to this file")
	f.IntVar(&o.maxPods, "max-pods", 0, "pod limit the kube-reserved recommendation is sized for (default: the node's)")
	htmlFlag(f, &o.html)
	return cmd
}

// busyboxSleep names the lab's busybox image running sleep: a container with a process of its own.
const busyboxSleep = "busybox-sleep"

func runDensity(cmd *cobra.Command, s streams, g *globalOptions, o *densityOptions) error {
	switch {
	case o.trials < 1:
		return usageError("--trials %d: want 1 or more", o.trials)
	case o.window < 2*time.Second:
		return usageError("--window %v: want 2s or more", o.window)
	case o.settle < 0:
		return usageError("--settle %v: want 0 or more", o.settle)
	case o.namespace == "":
		return usageError("--namespace: give one")
	case len(validation.IsDNS1123Label(o.namespace)) > 0:
		return usageError("--namespace %q: %s", o.namespace, strings.Join(validation.IsDNS1123Label(o.namespace), "; "))
	case o.containers < 1 || o.containers > 64:
		return usageError("--containers-per-pod %d: want 1 to 64", o.containers)
	case !(o.percentile > 0 && o.percentile < 100):
		return usageError("--percentile %v: want one above 0 and below 100 (99 reads the 99th percentile)", o.percentile)
	case o.maxPods < 0:
		return usageError("--max-pods %d: want 1 or more (0 for the node's own limit)", o.maxPods)
	}
	if o.kwok {
		if !cmd.Flags().Changed("pods") {
			o.pods = nil // from the kwok nodes' capacity
		}
		switch {
		case o.html != "":
			return usageError("--html and --kwok: the page shows a node's per-pod model; read a kwok run's table or JSON")
		case o.churn != "":
			return usageError("--churn and --kwok: kwok's pods start no container; measure churn on a real node")
		case o.node != "":
			return usageError("--node and --kwok: --kwok spreads the pods over every kwok node")
		}
	}
	if o.pods != nil || !o.kwok {
		if err := density.CheckCounts(o.pods, 0, 0); err != nil {
			return usageError("--pods: %w", err)
		}
	}
	churn := 0.0
	if o.churn != "" {
		var err error
		if churn, err = density.ParseRate(o.churn); err != nil {
			return usageError("--churn: %w", err)
		}
	}
	if err := checkHTML(o.html); err != nil {
		return err
	}
	if err := checkOutput("--allocatable-out", o.allocatable); err != nil {
		return err
	}
	if o.kwok && o.allocatable != "" {
		return usageError("--allocatable-out and --kwok: kwok's nodes run no daemon; measure a real node")
	}
	var command []string
	if o.image == busyboxSleep {
		o.image, command = images.Busybox.Name, images.BusyboxSleep
		if o.pull == "" {
			o.pull = "never"
		}
	}
	image, pullNever, err := podImage(o.image, "pause", images.Pause, o.pull)
	if err != nil {
		return err
	}
	seed := runSeed(o.seed)
	qps := float32(50)
	if o.kwok {
		qps = 200 // thousands of pods to create and delete between windows
	}
	c, err := g.cluster(s, lab.DefaultDir()).client(kube.Options{UserAgent: "tare-density", Timeout: 30 * time.Second, QPS: qps, Burst: 2 * int(qps)})
	if err != nil {
		return fmt.Errorf("tare density creates pods through the API server: %w", err)
	}
	cs, err := c.Clientset()
	if err != nil {
		return err
	}
	rep, err := density.Run(cmd.Context(), cs, density.Options{
		Node: o.node, Host: sample.HostName(g.procRoot), Namespace: o.namespace, Image: image, Command: command, PullNever: pullNever, Counts: o.pods, Trials: o.trials,
		Window: o.window, Settle: o.settle, Seed: seed, MaxPods: o.maxPods, Containers: o.containers, Churn: churn, Kwok: o.kwok, Percentile: o.percentile, MemoryRoot: density.MemoryRoot(g.sysRoot),
		Session: session.Options{
			Sampler:  g.sampleOptions(sample.Options{Interval: time.Second, Detail: 5 * time.Second}),
			Duration: o.window, Version: Version,
		},
		Say: func(format string, a ...any) { fmt.Fprintf(s.err, format+"\n", a...) },
	})
	if len(rep.Steps) > 0 {
		out := density.Output{Report: rep}
		if !rep.Kwok {
			out.RuntimeClass = density.RuntimeClass(o.runtimeClass, o.handler, rep.Model)
		}
		if rerr := render(s, g, out); rerr != nil {
			return rerr
		}
		if herr := densityHTML(s, o.html, "tare density with "+c.Source, out); herr != nil {
			return herr
		}
		if aerr := writeAllocatable(s, o.allocatable, rep); aerr != nil {
			return aerr
		}
	}
	switch {
	case errors.Is(err, density.ErrNamespaceExists):
		return usageError("%w", err)
	case err != nil:
		return fmt.Errorf("tare density (with %s): %w", c.Source, err)
	}
	return nil
}

// densityHTML writes the run's page to path, when given.
func densityHTML(s streams, path, what string, out density.Output) error {
	if path == "" {
		return nil
	}
	return writeHTML(s, path, htmlreport.Density(out.View(), what, Version))
}

// writeAllocatable writes the run's measured allocatable to path, when given; a run without one says why.
func writeAllocatable(s streams, path string, rep density.Report) error {
	if path == "" {
		return nil
	}
	if rep.Allocatable == nil {
		return fmt.Errorf("--allocatable-out %s: no measured allocatable: it needs the percentile CPU and the working set at two pod counts or more (see the warnings)", path)
	}
	if err := userfile.Write(path, rep.Allocatable.WriteYAML); err != nil {
		return fmt.Errorf("--allocatable-out: %w", err)
	}
	fmt.Fprintf(s.err, "Measured allocatable: %s\n", path)
	return nil
}
