package netpath

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/tare-dev/tare/internal/datapath"
)

// Path is a way from the load generator's client to its server.
type Path string

// The paths, each measured the same way. Host is the baseline the same-node paths are compared with,
// HostCrossNode that of the cross-node paths when it is measured (else Host).
const (
	Host          Path = "host"            // client and server on the machine, over loopback
	HostCrossNode Path = "host-cross-node" // the machine to a hostNetwork pod on another node, over the node network
	HostNetPod    Path = "hostnet-pod"     // client and server in a hostNetwork pod, over the node's loopback
	PodSameNode   Path = "pod-same-node"   // pod to pod on one node, through the node's bridge
	PodCrossNode  Path = "pod-cross-node"  // pod to a pod on another node, as the cluster routes it
	VXLAN         Path = "vxlan"           // the same pods as pod-cross-node, through a VXLAN tunnel (the tare lab's overlay)
	ClusterIP     Path = "clusterip"       // pod to a Service's ClusterIP (kube-proxy) to the pod on the same node
)

// Paths lists every path in the order tables show them.
var Paths = []Path{Host, HostCrossNode, HostNetPod, PodSameNode, PodCrossNode, VXLAN, ClusterIP}

// CrossNode says whether the path crosses to a second node.
func (p Path) CrossNode() bool { return p == HostCrossNode || p == PodCrossNode || p == VXLAN }

// baselineOf is the path a lane of path p is compared with: host networking across nodes for the pod
// network's cross-node paths when the run measured it (the same underlay, only the pod network's part
// differs), else the machine's loopback (host).
func baselineOf(p Path, crossMeasured bool) Path {
	if crossMeasured && (p == PodCrossNode || p == VXLAN) {
		return HostCrossNode
	}
	return Host
}

// baselineLabel names the lane lane l is compared with: host-cross-node's at the same MTU, or the
// machine's loopback (host).
func baselineLabel(l Lane, crossMeasured bool) string {
	b := baselineOf(l.Path, crossMeasured)
	if b == Host {
		return string(Host)
	}
	return Lane{Path: b, MTU: l.MTU}.Label()
}

// Mode is a kind of load.
type Mode string

// The modes.
const (
	TCPStream Mode = "tcp-stream" // iperf3: one-way TCP throughput
	UDPStream Mode = "udp-stream" // iperf3 -u -b 0: UDP throughput and loss
	TCPRR     Mode = "tcp-rr"     // sockperf ping-pong: request/response latency and transactions/s
	TCPCRR    Mode = "tcp-crr"    // tare-crr: a connection per request/response (netperf's TCP_CRR)
	// The storage pattern (tare-crr --keep: transactions back to back on one connection per stream): a
	// remote read is a small request and a block-sized answer, a remote write a block-sized request and a
	// small answer; --sizes is the block.
	StorageRead  Mode = "storage-read"
	StorageWrite Mode = "storage-write"
)

// StorageCommand is the small side of a storage transaction, in bytes: a command or its completion (an
// NVMe/TCP command capsule is 72 bytes, an iSCSI basic header segment 48).
const StorageCommand = 64

// Modes lists every mode.
var Modes = []Mode{TCPStream, UDPStream, TCPRR, TCPCRR, StorageRead, StorageWrite}

// Stream says whether the mode measures throughput alone (else transactions: their rate and latency).
func (m Mode) Stream() bool { return m == TCPStream || m == UDPStream }

// Storage says whether the mode is the storage pattern (transactions that also move blocks: throughput too).
func (m Mode) Storage() bool { return m == StorageRead || m == StorageWrite }

// UsesCRR says whether the mode's client and server are tare-crr.
func (m Mode) UsesCRR() bool { return m == TCPCRR || m.Storage() }

// crrSizes are the request and response sizes of a tare-crr transaction of mode m with messages (blocks)
// of size.
func (m Mode) crrSizes(size int) (request, response int) {
	switch m {
	case StorageRead:
		return StorageCommand, size
	case StorageWrite:
		return size, StorageCommand
	}
	return size, size
}

// Lane is one thing measured: a path, a mode and a message size, and on the pod network's paths the pod
// MTU set for it (--mtu; 0: the network's own). A path given twice (an A/A check) gets a copy number from
// 2 on, so both are measured and compared.
type Lane struct {
	Path Path `json:"path"`
	Copy int  `json:"copy,omitempty"`
	Mode Mode `json:"mode"`
	Size int  `json:"size"`
	MTU  int  `json:"mtu,omitempty"`
}

// Label names the lane's path: "host", "host#2" for a second copy, "vxlan@mtu9000" with an MTU set.
func (l Lane) Label() string {
	s := string(l.Path)
	if l.Copy > 1 {
		s = fmt.Sprintf("%s#%d", l.Path, l.Copy)
	}
	if l.MTU > 0 {
		s += fmt.Sprintf("@mtu%d", l.MTU)
	}
	return s
}

// MTUSet says whether --mtu gives the path lanes of their own: the pod network's paths, and host
// networking across nodes (its lane at MTU m runs with the node network at m).
func (p Path) MTUSet() bool { return p.PodNetwork() || p == HostCrossNode }

// PodNetwork says whether the path runs over the pod network, whose MTU --mtu sets (not the host's or a
// hostNetwork pod's loopback).
func (p Path) PodNetwork() bool {
	return p == PodSameNode || p == PodCrossNode || p == VXLAN || p == ClusterIP
}

// ParsePaths reads --paths: known names, comma-separated; a name may repeat (host,host: an A/A check).
func ParsePaths(s string) ([]Lane, error) {
	return datapath.ParsePlaces(s, "path", Paths, func(p Path, n int) Lane { return Lane{Path: p, Copy: n} })
}

// ParseModes reads --modes.
func ParseModes(s string) ([]Mode, error) { return datapath.ParseSet(s, "mode", Modes) }

// Plan is every lane of a run: each path with each mode and each size, and each path --mtu sets
// (MTUSet) with each of mtus (none: the network's own MTU only).
func Plan(paths []Lane, modes []Mode, sizes, mtus []int) []Lane {
	// A setting is a lane without its path: a mode and a size.
	settings := datapath.Cross(modes, sizes, func(m Mode, size int) Lane { return Lane{Mode: m, Size: size} })
	return datapath.PlanLanes(settings, paths, func(l, p Lane) []Lane {
		l.Path, l.Copy = p.Path, p.Copy
		if len(mtus) == 0 || !p.Path.MTUSet() {
			return []Lane{l}
		}
		var out []Lane
		for _, mtu := range mtus {
			l.MTU = mtu
			out = append(out, l)
		}
		return out
	})
}

// ParseMTUs reads --mtu: whole numbers of bytes, comma-separated, each from min to max.
func ParseMTUs(s string, minMTU, maxMTU int) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < minMTU || n > maxMTU {
			return nil, fmt.Errorf("MTU %q: want a number of bytes from %d to %d (1500,9000)", f, minMTU, maxMTU)
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out, nil
}

// Slot is one trial of a net run: a lane in a round.
type Slot = datapath.SlotOf[Lane]
