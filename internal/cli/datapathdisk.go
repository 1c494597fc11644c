package cli

import (
	"context"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"

	"github.com/tare-dev/tare/internal/datapath"
	"github.com/tare-dev/tare/internal/datapath/diskpath"
	"github.com/tare-dev/tare/internal/lab/images"
)

type datapathDiskOptions struct {
	targets, bs, rw, depths, size string
	trials                        int
	duration                      time.Duration
	dir, node, namespace          string
	image, pull, labDir           string
	seed                          uint64
	html                          string
}

func newDatapathDisk(s streams, g *globalOptions) *cobra.Command {
	o := &datapathDiskOptions{}
	cmd := &cobra.Command{
		Use:   "disk",
		Short: "IOPS, latency and CPU per 10k I/Os of each pod storage target against the host's file system",
		Long: `Run the same fio job (libaio, time based, one file per target laid out before the trials) on each of
--targets, in trials shuffled across targets every round, with the measuring session running during each
trial (fio's ramp, the first fifth of the trial and at most 1 s, and the last fifth left out):

  host      a directory under --dir on this machine, fio run by tare: the baseline
  rootfs    the pod's root file system (overlayfs; its upper layer is containerd's, on the node's disk)
  emptydir  an emptyDir volume (under the kubelet's root directory)
  hostpath  a hostPath volume: a directory under --dir
  pvc       a claim bound to a local PersistentVolume (with its own StorageClass) at a directory under --dir

Every target's file has the same --size on the same device: tare checks each target's device (an
overlay's upper layer for rootfs) against the host target's and prints it, and checks each target's free
space before writing anything. A target that refuses O_DIRECT is measured buffered, fio dropping the
file's cached pages before each trial; the table says which. Figures from fio's JSON report: IOPS, MB/s,
completion latency p50 and p99; and the node's CPU-seconds per 10,000 I/Os from the session. Every target
is compared with host: the ratio target ÷ host with a 95% interval (Hodges–Lehmann on the logarithms)
and the Mann–Whitney p-value. A target given twice (host,host) is measured twice: an A/A check.
--html FILE also writes a page with each target's ratio to host and its interval as bars, per figure,
and the targets, the table's figures and every trial.

Every target is local: files on this node's own disk. Network storage (a Ceph RBD or iSCSI block device,
NVMe/TCP, an NFS or CephFS mount) is not measured unless --dir is on it: mount it (or a file system on the
block device) on the node and give --dir a directory there, and the host and hostpath targets measure it
(the targets table prints each target's file system and device). What the pod network adds to a remote
read or write is tare datapath net's storage-read and storage-write against host-cross-node.

The pod runs in --namespace, created for the run and deleted after it; the PersistentVolume, the
StorageClass, the files and the directories the run made are removed too, also on error or Ctrl-C (which
prints the trials finished so far). On the tare lab the tools image (with fio) is imported into the
nodes first; tare lab install --datapath installs fio on this machine. Needs root, like tare measure, and
runs on the node it measures.` + figuresHelp,
		Example: `  # On the lab: every target, random 4k reads
  sudo tare datapath disk

  # An A/A check of the host, no cluster needed
  sudo tare datapath disk --targets host,host --rw randread --bs 4k --trials 6 --html disk.html`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDatapathDisk(cmd.Context(), s, g, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.targets, "targets", "host,rootfs,emptydir,hostpath,pvc", "where the file lives, comma-separated (host,rootfs,emptydir,hostpath,pvc)")
	f.StringVar(&o.bs, "bs", "4k", "block sizes (bytes, multiples of 512; k and m suffixes)")
	f.StringVar(&o.rw, "rw", "randread", "access patterns: randread, randwrite, read, write")
	f.StringVar(&o.depths, "iodepth", "1", "queue depths (libaio)")
	f.StringVar(&o.size, "size", "256m", "size of every target's file (whole mebibytes; m and g suffixes)")
	f.IntVar(&o.trials, "trials", 5, "trials of every target, pattern, block size and depth, interleaved")
	f.DurationVar(&o.duration, "duration", 4*time.Second, "length of each trial (fio's ramp included), at least 1s")
	f.StringVar(&o.dir, "dir", "/var/tmp/tare-datapath-disk", "directory of the host target's file and of the hostpath and pvc volumes; on the node's disk")
	f.StringVar(&o.node, "node", "", "the node of the pod (default: this machine's node, else the only one)")
	f.StringVarP(&o.namespace, "namespace", "n", "tare-datapath-disk", "namespace of the run's pod: created for the run and deleted after it")
	f.StringVar(&o.image, "image", "tools", "image with fio; tools is the lab's ("+images.Tools.Name+", never pulled)")
	f.StringVar(&o.pull, "pull", "", "image pull policy: never or if-not-present (default: never for tools, else if-not-present)")
	labDirFlag(f, &o.labDir, "lab-dir", "the lab to use when one runs (its kubeconfig and tools image)")
	f.Uint64Var(&o.seed, "seed", 0, "seed of the trial order (default: from the clock)")
	htmlFlag(f, &o.html)
	return cmd
}

// diskOptionsOf checks the flags and turns them into a run's options (without its cluster access).
func diskOptionsOf(o *datapathDiskOptions) (diskpath.Options, error) {
	var d diskpath.Options
	var err error
	if d.Targets, err = diskpath.ParseTargets(o.targets); err != nil {
		return d, usageError("--targets: %w", err)
	}
	if d.RWs, err = diskpath.ParseRWs(o.rw); err != nil {
		return d, usageError("--rw: %w", err)
	}
	if d.BSs, err = diskpath.ParseBlockSizes(o.bs); err != nil {
		return d, usageError("--bs: %w", err)
	}
	if d.Depths, err = diskpath.ParseDepths(o.depths); err != nil {
		return d, usageError("--iodepth: %w", err)
	}
	if d.Size, err = diskpath.ParseFileSize(o.size); err != nil {
		return d, usageError("--size: %w", err)
	}
	switch {
	case o.trials < 1:
		return d, usageError("--trials %d: want 1 or more", o.trials)
	case o.duration < time.Second || o.duration%(100*time.Millisecond) != 0:
		return d, usageError("--duration %v: want 1s or more, in tenths of a second", o.duration)
	case o.namespace == "":
		return d, usageError("--namespace: give one")
	case o.dir == "" || o.dir[0] != '/':
		return d, usageError("--dir %q: want an absolute path", o.dir)
	}
	for _, bs := range d.BSs {
		if int64(bs) > d.Size {
			return d, usageError("--bs %s is larger than --size %s", datapath.FormatSize(bs), o.size)
		}
	}
	d.Rounds, d.Duration, d.Dir, d.Node, d.Namespace = o.trials, o.duration, o.dir, o.node, o.namespace
	return d, nil
}

func runDatapathDisk(ctx context.Context, s streams, g *globalOptions, o *datapathDiskOptions) error {
	do, err := diskOptionsOf(o)
	if err != nil {
		return err
	}
	if err := checkHTML(o.html); err != nil {
		return err
	}
	image, pullNever, err := podImage(o.image, "tools", images.Tools, o.pull)
	if err != nil {
		return err
	}
	say, host, sopts := datapathSession(s, g, o.duration)
	do.Host, do.Image, do.PullNever, do.Seed, do.Say, do.ProcRoot, do.Session = host, image, pullNever, runSeed(o.seed), say, g.procRoot, sopts
	onlyHost := true
	for _, l := range do.Targets {
		onlyHost = onlyHost && !l.InPod()
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
	}
	rep, err := diskpath.Run(ctx, cs, do)
	return datapathResult(s, g, viewOf(rep, diskpath.Table), o.html, rep.Result(), source, err)
}
