package diskpath

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/tare-dev/tare/internal/datapath"
)

// Target is where a disk trial's file lives.
type Target string

// The targets, all on the same file system of the node (the run checks it). TargetHost is the baseline.
const (
	TargetHost     Target = "host"     // a directory on the machine, fio run by tare
	TargetRootFS   Target = "rootfs"   // the pod's root file system: an overlayfs whose upper layer is containerd's
	TargetEmptyDir Target = "emptydir" // an emptyDir volume, under the kubelet's root directory
	TargetHostPath Target = "hostpath" // a hostPath volume: a directory beside the host target's
	TargetPVC      Target = "pvc"      // a PersistentVolumeClaim bound to a local PersistentVolume beside the host target's
)

// Targets lists every target in the order tables show them.
var Targets = []Target{TargetHost, TargetRootFS, TargetEmptyDir, TargetHostPath, TargetPVC}

// RW is fio's access pattern.
type RW string

// The patterns.
const (
	RandRead  RW = "randread"
	RandWrite RW = "randwrite"
	SeqRead   RW = "read"
	SeqWrite  RW = "write"
)

// RWs lists every pattern.
var RWs = []RW{RandRead, RandWrite, SeqRead, SeqWrite}

// Writes says whether the pattern writes (else it reads).
func (rw RW) Writes() bool { return rw == RandWrite || rw == SeqWrite }

// Lane is one thing a disk run measures: a target, a pattern, a block size and a queue depth. A
// target given twice (an A/A check) gets a copy number from 2 on.
type Lane struct {
	Target  Target `json:"target"`
	Copy    int    `json:"copy,omitempty"`
	RW      RW     `json:"rw"`
	BS      int    `json:"bs"`
	IODepth int    `json:"iodepth"`
}

// Label names the lane's target: "host", or "host#2" for a second copy.
func (l Lane) Label() string {
	if l.Copy > 1 {
		return fmt.Sprintf("%s#%d", l.Target, l.Copy)
	}
	return string(l.Target)
}

// InPod says whether the lane's fio runs in the run's pod.
func (l Lane) InPod() bool { return l.Target != TargetHost }

// group is the lane without its target: the trials compared with each other.
func (l Lane) group() Lane { return Lane{RW: l.RW, BS: l.BS, IODepth: l.IODepth} }

// ParseTargets reads --targets: known names, comma-separated; a name may repeat (host,host: an A/A check).
func ParseTargets(s string) ([]Lane, error) {
	return datapath.ParsePlaces(s, "target", Targets, func(t Target, n int) Lane { return Lane{Target: t, Copy: n} })
}

// ParseRWs reads --rw.
func ParseRWs(s string) ([]RW, error) { return datapath.ParseSet(s, "pattern", RWs) }

// ParseBlockSizes reads --bs: sizes as ParseSizes reads them, multiples of 512 bytes (direct I/O's unit)
// up to 64m.
func ParseBlockSizes(s string) ([]int, error) {
	out, err := datapath.ParseSizes(s)
	if err != nil {
		return nil, err
	}
	for _, n := range out {
		if n%512 != 0 || n > 64<<20 {
			return nil, fmt.Errorf("block size %s: want a multiple of 512 bytes, at most 64m", datapath.FormatSize(n))
		}
	}
	return out, nil
}

// ParseDepths reads --iodepth: queue depths from 1 to 1024.
func ParseDepths(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 1024 {
			return nil, fmt.Errorf("queue depth %q: want a whole number from 1 to 1024", f)
		}
		out = append(out, n)
	}
	return datapath.Unique(out), nil
}

// ParseFileSize reads --size: bytes with a k, m or g suffix (binary), at least 1m and a whole number of
// 1 MiB.
func ParseFileSize(s string) (int64, error) {
	f := strings.ToLower(strings.TrimSpace(s))
	mult := int64(1)
	switch { // one suffix at most: 1mg is no size
	case strings.HasSuffix(f, "k"):
		mult, f = 1<<10, strings.TrimSuffix(f, "k")
	case strings.HasSuffix(f, "m"):
		mult, f = 1<<20, strings.TrimSuffix(f, "m")
	case strings.HasSuffix(f, "g"):
		mult, f = 1<<30, strings.TrimSuffix(f, "g")
	}
	n, err := strconv.ParseInt(f, 10, 64)
	if err != nil || n <= 0 || n > (1<<40)/mult || (n*mult)%(1<<20) != 0 {
		return 0, fmt.Errorf("file size %q: want whole mebibytes, with an m or g suffix (256m, 1g)", s)
	}
	return n * mult, nil
}

// Plan is every lane of a disk run: each target with each pattern, block size and queue depth.
func Plan(targets []Lane, rws []RW, bss, depths []int) []Lane {
	// A setting is a lane without its target (group).
	settings := datapath.Cross(datapath.Cross(rws, bss, func(rw RW, bs int) Lane { return Lane{RW: rw, BS: bs} }), depths,
		func(g Lane, d int) Lane { g.IODepth = d; return g })
	return datapath.PlanLanes(settings, targets, func(g, t Lane) []Lane {
		g.Target, g.Copy = t.Target, t.Copy
		return []Lane{g}
	})
}

// Slot is one trial of a disk run: a lane in a round.
type Slot = datapath.SlotOf[Lane]
