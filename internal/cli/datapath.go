package cli

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"

	"github.com/tare-dev/tare/internal/datapath"
	"github.com/tare-dev/tare/internal/datapath/netpath"
	"github.com/tare-dev/tare/internal/lab"
	"github.com/tare-dev/tare/internal/lab/images"
)

type datapathNetOptions struct {
	paths, modes, sizes string
	mtus                string
	trials, parallel    int
	duration            time.Duration
	node, namespace     string
	image, pull         string
	labDir              string
	seed                uint64
	html                string
}

// newDatapath is `tare datapath`: what the pod data path costs against the host (issue 16).
func newDatapath(s streams, g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "datapath",
		Short: "Measure what the pod network costs against the host on the same node",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newDatapathNet(s, g))
	cmd.AddCommand(newDatapathDisk(s, g))
	return cmd
}

func newDatapathNet(s streams, g *globalOptions) *cobra.Command {
	o := &datapathNetOptions{}
	cmd := &cobra.Command{
		Use:   "net",
		Short: "Throughput, latency and CPU per unit of work of each pod network path against the host's loopback",
		Long: `Run the same load generators over each --paths, in trials shuffled across paths every round, with the
measuring session running during each trial (its first and last fifth, at most 1 s each, left out):

  host            iperf3 and sockperf on this machine, over loopback: the baseline of the same-node paths
  host-cross-node this machine to a hostNetwork pod on a second node, over the node network (host
                  networking across nodes): when measured, the baseline of pod-cross-node and vxlan
  hostnet-pod     client and server in a hostNetwork pod
  pod-same-node   pod to pod on one node, through the node's bridge
  pod-cross-node  pod to a pod on a second node, as the cluster routes it
  vxlan           the same two pods through a VXLAN tunnel (the tare lab's overlay, switched for those trials)
  clusterip       pod to a ClusterIP Service (kube-proxy) in front of a pod on the same node

Modes: tcp-stream and udp-stream (iperf3 --json: received Gbit/s, retransmits, loss), tcp-rr
(sockperf ping-pong --full-rtt: round-trip p50 and p99 in µs, round trips per second) and tcp-crr
(tare-crr, netperf's TCP_CRR: a new connection for every request and response, the server closing first;
connections per second, p50 and p99 of a whole connection in µs, failed ones counted; --parallel
connections under way at once), and the storage pattern, storage-read and storage-write (tare-crr --keep:
transactions back to back on one connection per stream, a 64-byte request and a --sizes block as the
answer, as a remote read is, or a block as the request and a 64-byte answer, as a remote write is; blocks
in Gbit/s, operations per second, p50 and p99 of a transaction in µs). The storage team's comparison is one
run on a two-node lab: --paths host-cross-node,pod-cross-node,vxlan --modes tcp-stream,storage-read,storage-write
--sizes 4k,64k,1m. Each trial gives the node's CPU-seconds per Gbit (per 10,000 round trips
or connections) and each group's. Every path is compared
with its baseline (host, or host-cross-node for the cross-node pod paths when it is measured): the ratio path ÷ baseline with a 95% interval (Hodges–Lehmann on the logarithms) and the
Mann–Whitney p-value. A path given twice (host,host) is measured twice: an A/A check. --html FILE
also writes a page with each path's ratio to its baseline and its interval as bars, each mode's main figure
against message size per path, and the table's figures and every trial.

The pods run in --namespace, created for the run and deleted after it, also on error or Ctrl-C (which
prints the trials finished so far). On the tare lab the tools image is imported into every node first
(tare lab install --datapath installs iperf3, sockperf and fio); elsewhere give --image with iperf3 and
sockperf on PATH (and tare-crr, from tare lab install --datapath's cache, for tcp-crr). Traffic goes only between this machine's loopback and the run's own pods. Needs root,
like tare measure, and runs on the node it measures.` + figuresHelp,
		Example: `  # On the lab (tare lab up --nodes 2 for the cross-node paths)
  sudo tare datapath net

  # An A/A check and VXLAN, large messages only, as JSON
  sudo tare datapath net --paths host,host,vxlan --modes tcp-stream --sizes 128k -o json

  # The host alone (no cluster), with an HTML report
  sudo tare datapath net --paths host,host --sizes 1k,16k,64k --html datapath.html`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDatapathNet(cmd.Context(), s, g, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.paths, "paths", "host,pod-same-node,vxlan,clusterip", "paths to measure, comma-separated (host,host-cross-node,hostnet-pod,pod-same-node,pod-cross-node,vxlan,clusterip)")
	f.StringVar(&o.modes, "modes", "tcp-stream,tcp-rr", "loads: tcp-stream, udp-stream, tcp-rr, tcp-crr, storage-read, storage-write")
	f.StringVar(&o.sizes, "sizes", "1k,16k", "message sizes (bytes; k and m suffixes); tcp-rr and udp-stream take at most 65507")
	f.StringVar(&o.mtus, "mtu", "", "MTUs to measure each pod network path and host-cross-node with, comma-separated (1500,9000): the tare lab's pods, bridges, veths, VXLAN devices and underlay are set for each trial and set back after the run; host-cross-node at M runs with the node network at M (the pods' at M−50)")
	f.IntVar(&o.trials, "trials", 5, "trials of every path, mode and size, interleaved")
	f.DurationVar(&o.duration, "duration", 4*time.Second, "length of each trial, whole seconds (sockperf adds its own 2 s warm-up)")
	f.IntVar(&o.parallel, "parallel", 1, "parallel streams of the stream modes, connections under way at once of tcp-crr")
	f.StringVar(&o.node, "node", "", "the node of the pods (default: this machine's node, else the only one)")
	f.StringVarP(&o.namespace, "namespace", "n", "tare-datapath", "namespace of the run's pods: created for the run and deleted after it")
	f.StringVar(&o.image, "image", "tools", "image with iperf3 and sockperf; tools is the lab's ("+images.Tools.Name+", never pulled)")
	f.StringVar(&o.pull, "pull", "", "image pull policy: never or if-not-present (default: never for tools, else if-not-present)")
	labDirFlag(f, &o.labDir, "lab-dir", "the lab to use when one runs (its kubeconfig, tools image and overlay)")
	f.Uint64Var(&o.seed, "seed", 0, "seed of the trial order (default: from the clock)")
	htmlFlag(f, &o.html)
	return cmd
}

func runDatapathNet(ctx context.Context, s streams, g *globalOptions, o *datapathNetOptions) error {
	lanes, err := netpath.ParsePaths(o.paths)
	if err != nil {
		return usageError("--paths: %w", err)
	}
	modes, err := netpath.ParseModes(o.modes)
	if err != nil {
		return usageError("--modes: %w", err)
	}
	sizes, err := datapath.ParseSizes(o.sizes)
	if err != nil {
		return usageError("--sizes: %w", err)
	}
	var mtus []int
	if o.mtus != "" {
		if mtus, err = netpath.ParseMTUs(o.mtus, lab.MinPodMTU, lab.MaxPodMTU); err != nil {
			return usageError("--mtu: %w", err)
		}
		for _, m := range mtus {
			if m-lab.VTEPOverhead < lab.MinPodMTU && slices.ContainsFunc(lanes, func(l netpath.Lane) bool { return l.Path == netpath.HostCrossNode }) {
				return usageError("--mtu %d: host-cross-node runs with the node network at the MTU and the pod network %d below it, at least %d: want %d or more", m, lab.VTEPOverhead, lab.MinPodMTU, lab.MinPodMTU+lab.VTEPOverhead)
			}
		}
	}
	switch {
	case o.trials < 1:
		return usageError("--trials %d: want 1 or more", o.trials)
	case o.duration < time.Second || o.duration%time.Second != 0:
		return usageError("--duration %v: want whole seconds, 1s or more", o.duration)
	case o.parallel < 1 || o.parallel > 128:
		return usageError("--parallel %d: want 1 to 128", o.parallel)
	case o.namespace == "":
		return usageError("--namespace: give one")
	}
	if err := netpath.CheckLanes(netpath.Plan(lanes, modes, sizes, mtus)); err != nil {
		return usageError("%w", err)
	}
	if err := checkHTML(o.html); err != nil {
		return err
	}
	image, pullNever, err := podImage(o.image, "tools", images.Tools, o.pull)
	if err != nil {
		return err
	}
	say, host, sopts := datapathSession(s, g, o.duration)
	do := netpath.Options{Node: o.node, Host: host, Namespace: o.namespace, Image: image, PullNever: pullNever,
		Paths: lanes, Modes: modes, Sizes: sizes, MTUs: mtus, Rounds: o.trials, Duration: o.duration, Parallel: o.parallel, Seed: runSeed(o.seed), Say: say,
		Session: sopts}
	onlyHost, anyHost := true, false
	for _, l := range lanes {
		onlyHost = onlyHost && l.Path == netpath.Host
		anyHost = anyHost || l.Path == netpath.Host || l.Path == netpath.HostCrossNode
	}
	if slices.ContainsFunc(modes, netpath.Mode.UsesCRR) {
		do.CRR.Pod = images.CRRName
		if anyHost {
			if do.CRR.Host, err = images.CRRProgram(ctx); err != nil {
				return fmt.Errorf("tcp-crr's program for the host path: %w (tare lab install --datapath builds it)", err)
			}
		}
	}
	source := "this machine"
	var cs kubernetes.Interface
	if !onlyHost {
		c, err := podCluster(ctx, s, g, o.labDir, image, host, say)
		if err != nil {
			return err
		}
		source, cs, do.Exec = c.source, c.cs, c.exec
		do.Session.Sampler.PodNames = c.podNames
		if c.lab != nil && len(c.lab.State.ExtraNodes) > 0 {
			l := c.lab
			do.SetOverlay = func(vxlan bool) error {
				mode := lab.OverlayRouted
				if vxlan {
					mode = lab.OverlayVXLAN
				}
				return l.SetOverlay(mode)
			}
		}
		if l := c.lab; l != nil {
			// The pod bridge is made with the node's first pod: without --mtu, a lab that has none yet
			// leaves the pod paths' MTU unknown instead of failing the run.
			if do.PodMTU, err = l.PodMTU(); err != nil && len(mtus) > 0 {
				return fmt.Errorf("reading the lab's pod MTU: %w", err)
			}
			do.UnderlayOverhead = lab.VTEPOverhead
			do.SetPodMTU = func(mtu int) error {
				_, err := l.SetPodMTU(mtu)
				return err
			}
		}
	}
	if len(mtus) > 0 && do.SetPodMTU == nil {
		return usageError("--mtu sets the tare lab's pod network MTU: measure on a lab (tare lab up; --lab-dir), or without --mtu")
	}
	rep, err := netpath.Run(ctx, cs, do)
	return datapathResult(s, g, viewOf(rep, netpath.Table), o.html, rep.Result(), source, err)
}
