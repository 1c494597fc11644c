package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/tare-dev/tare/internal/lab"
	"github.com/tare-dev/tare/internal/lab/images"
)

func newLab(s streams, g *globalOptions) *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "lab",
		Short: "A real single-node Kubernetes cluster on this machine, from upstream components",
		Long: `The lab runs the real upstream components as local processes, what a kubeadm or minikube node runs,
without a VM and without an image registry: etcd, containerd, runc, the CNI plugins and iptables from
Debian's packages; kube-apiserver, kube-controller-manager, kube-scheduler, kubelet and kube-proxy built
from the upstream k8s.io/kubernetes Go module at ` + lab.KubernetesVersion + `; kwok from its Go module for fake
nodes. Pods run tiny images tare builds from Go code (a pause and an HTTP app).

A lab lives in one directory (--dir; default $TARE_LAB_DIR, /var/lib/tare/lab as root, else
~/.local/state/tare/lab): state, certificates, data, logs. Without root the lab is control plane only
(etcd, kube-apiserver, controller-manager, scheduler) with kwok nodes.

As kind and minikube do, up adds the lab to your kubeconfig ($KUBECONFIG, else ~/.kube/config) as the
context tare-lab (tare-lab-NAME for a lab in another --dir) and makes it current; down takes it out and
makes the previous context current again.`,
		Example: `  sudo tare lab install
  sudo tare lab up --profile tuned     # adds the context tare-lab to (root's) kubeconfig, made current
  sudo kubectl get nodes
  sudo tare measure --duration 60s
  sudo tare lab down`,
	}
	labDirFlag(cmd.PersistentFlags(), &dir, "dir", "the lab's directory")
	cmd.AddCommand(newLabInstall(s, g), newLabUp(s, g, &dir), newLabDown(s, g, &dir), newLabStatus(s, g, &dir),
		newLabEnv(s, g, &dir), newLabLogs(s, &dir), newLabPause(s, g, &dir), newLabUnpause(s, g, &dir), newLabRetune(s, g, &dir))
	return cmd
}

func newLabInstall(s streams, g *globalOptions) *cobra.Command {
	var binDir string
	var prometheus, datapath bool
	cmd := &cobra.Command{
		Use:   "install",
		Short: "Get every lab component (cached: a second install is a no-op)",
		Long: `Install what the lab runs. Debian packages are installed with apt when missing (needs root); the
Kubernetes components are built once into the cache (~/.cache/tare, or $TARE_CACHE_DIR) with their version
stamped so kubectl can read it (one go build for all five); --bin-dir uses binaries you already have
instead. The packages, the Kubernetes components and kwok are got at once; stderr shows each step as it
starts and as it ends, with how long it took.

--prometheus also builds upstream Prometheus ` + lab.PrometheusVersion + ` (prometheus and promtool) into the cache:
Debian's prometheus package is built without Kubernetes service discovery, which the shipped scrape
configuration (tare agent manifest's agents, deploy/prometheus/prometheus.yml) uses.

--datapath also installs the network and disk test tools iperf3, sockperf and fio (Debian packages, with
apt when missing) and builds the image ` + images.Tools.Name + ` from them: the tools with every shared
library they load, copied from this machine, which tare datapath runs in pods.`,
		Example: `  sudo tare lab install
  sudo tare lab install --bin-dir /usr/local/bin
  tare lab install --prometheus
  sudo tare lab install --datapath`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runLabInstall(cmd.Context(), s, g, binDir, installExtras{prometheus: prometheus, datapath: datapath})
		},
	}
	cmd.Flags().StringVar(&binDir, "bin-dir", "", "use the Kubernetes binaries in this directory instead of building them")
	cmd.Flags().BoolVar(&prometheus, "prometheus", false, "also build upstream Prometheus with Kubernetes service discovery")
	cmd.Flags().BoolVar(&datapath, "datapath", false, "also install iperf3, sockperf and fio and build the datapath tools image")
	return cmd
}

// installExtras are what lab install gets beyond the lab's own components, when asked.
type installExtras struct{ prometheus, datapath bool }

// runLabInstall prints what was installed, even when a later component failed.
func runLabInstall(ctx context.Context, s streams, g *globalOptions, binDir string, extras installExtras) error {
	start := time.Now()
	progress := func(st lab.InstallStep) { fmt.Fprintln(s.err, installProgress(st, time.Since(start))) }
	log := func(name string) { progress(lab.InstallStep{Name: name}) }
	comps, err := lab.Install(ctx, lab.InstallOptions{BinDir: binDir, Progress: progress})
	if err == nil && extras.prometheus {
		log("prometheus")
		var c lab.Component
		if c, err = lab.InstallPrometheus(ctx); err == nil {
			comps = append(comps, c)
		}
	}
	if err == nil && extras.datapath {
		log("datapath tools")
		var cs []lab.Component
		cs, err = lab.InstallDatapathTools(ctx)
		comps = append(comps, cs...)
	}
	if rerr := render(s, g, viewOf(comps, printInstalled)); rerr != nil {
		return rerr
	}
	if err != nil {
		return fmt.Errorf("lab install: %w", err)
	}
	return nil
}

// installProgress is the line lab install prints on stderr as a step starts ("installing kwok (0s
// elapsed)") and as it ends, with how its components were got and how long it took ("kwok: go install in
// 1m22s (1m40s elapsed)").
func installProgress(st lab.InstallStep, elapsed time.Duration) string {
	at := elapsed.Round(time.Second)
	if !st.Done {
		return fmt.Sprintf("installing %s (%s elapsed)", st.Name, at)
	}
	took := st.Took.Round(time.Second)
	if st.Took < time.Second {
		took = st.Took.Round(time.Millisecond)
	}
	if st.Err != nil {
		return fmt.Sprintf("%s: failed after %s (%s elapsed)", st.Name, took, at)
	}
	var sources []string
	for _, c := range st.Components {
		if !slices.Contains(sources, c.Source) {
			sources = append(sources, c.Source)
		}
	}
	if len(sources) == 0 {
		sources = []string{"nothing to do"}
	}
	return fmt.Sprintf("%s: %s in %s (%s elapsed)", st.Name, strings.Join(sources, ", "), took, at)
}

func printInstalled(w io.Writer, comps []lab.Component) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "COMPONENT\tVERSION\tSOURCE\tTOOK\tPATH")
	for _, c := range comps {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", c.Name, c.Version, c.Source, c.Took.Round(time.Millisecond), c.Path)
	}
	return tw.Flush()
}
