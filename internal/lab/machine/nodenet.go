package machine

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/tare-dev/tare/internal/kernel"
)

// The network of a lab with more than one node. Node 1 is the machine itself, as in a one-node lab; node N
// (N ≥ 2) is a network namespace tare-node-N whose eth0 is a veth into a host bridge, tare-nodes
// (10.250.0.1/24), at 10.250.0.(N+1), with its default route via the bridge. Each node's pods live on the
// node's own CNI bridge in 10.244.(N-1).0/24, and the machine routes each such range to its node's
// address: a pod reaches a pod on another node through the machine (ip_forward, which up records and down
// restores), and every node reaches the API server on the machine's own address through the same route.
// Pods keep their addresses between nodes: each node masquerades only its pods' traffic that leaves the
// pod network (PodMasquerade: in the node's namespace, and for node 1 a CNI- chain on the machine).
// Up records a node in the state before it makes its namespace and veth; down deletes the namespaces,
// the veths and the bridge (the routes go with it), whatever the state says, as it does for tare0.
// This plain routing is the lab's default; lab's overlay.go switches the same pod ranges onto a VXLAN overlay
// (tare-vx on the machine, one in each node's namespace) and back while the lab runs.

// The nodes' network: the bridge on the machine, its address (the nodes' gateway) and prefix length.
const (
	NodesBridge    = "tare-nodes"
	NodesGateway   = "10.250.0.1"
	nodesPrefixLen = 24
	// MasqChain masquerades a node's pods' traffic that leaves the pod network. Its CNI- prefix makes it
	// one of the chains the lab's down removes and its leftovers check finds (iptables.go).
	MasqChain       = "CNI-TARE-NODES"
	nodeNetnsPrefix = "tare-node-"
	nodeVethPrefix  = "tare-n" // host ends, tare-n2, tare-n3, …; the bridge's name shares the prefix
	netnsDir        = "/run/netns"
	// UnderlayMTU is the MTU of the bridge and veths between the nodes: 50 bytes more than the pods' 1500,
	// so that a pod's full-size packet fits the VXLAN overlay too (vtep.go) and switching the overlay
	// changes the encapsulation alone, not the path MTU (no "fragmentation needed", no smaller MSS).
	UnderlayMTU = "1550"
	// MaxNodes is the most real nodes a lab runs (one address and one pod range per node).
	MaxNodes = 200
)

// ExtraNode is a real node of the lab beyond the first: a network namespace named after the node, with
// its own kubelet, containerd and kube-proxy.
type ExtraNode struct {
	Name    string `json:"name"`     // node name and network namespace: tare-node-N
	Address string `json:"address"`  // eth0 in the namespace, on the tare-nodes bridge
	PodCIDR string `json:"pod_cidr"` // the node's pod range, on its own CNI bridge
	Veth    string `json:"veth"`     // the host end of eth0
}

// NewExtraNode describes node n (n ≥ 2).
func NewExtraNode(n int) ExtraNode {
	return ExtraNode{Name: fmt.Sprintf("%s%d", nodeNetnsPrefix, n), Address: fmt.Sprintf("10.250.0.%d", n+1),
		PodCIDR: fmt.Sprintf("10.244.%d.0/24", n-1), Veth: fmt.Sprintf("%s%d", nodeVethPrefix, n)}
}

// NetnsPath is where a node's network namespace is bind-mounted.
func (n ExtraNode) NetnsPath() string { return filepath.Join(netnsDir, n.Name) }

// PodRoute is a route to a node's pod range: via an address, through a link (onlink: the address need
// not be on one of the link's networks).
type PodRoute struct {
	Dst    string // the pod range
	Via    string
	Dev    string
	OnLink bool
}

// RoutedPodRoute is the machine's route to node n's pods in a routed lab (the lab's default), as up makes
// it and lab's overlay.go puts it back.
func (n ExtraNode) RoutedPodRoute() PodRoute {
	return PodRoute{Dst: n.PodCIDR, Via: n.Address, Dev: NodesBridge}
}

// run runs a network tool, returning its output in the error.
func run(name string, args ...string) error {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

// PodMasquerade are the iptables commands that masquerade traffic from a node's pods (subnet) leaving the
// pod network, and nothing else: pods see each other's addresses across nodes.
func PodMasquerade(subnet, clusterCIDR string) [][]string {
	return [][]string{
		{"iptables", "-w", "-t", "nat", "-N", MasqChain},
		{"iptables", "-w", "-t", "nat", "-A", MasqChain, "-j", "MASQUERADE"},
		{"iptables", "-w", "-t", "nat", "-A", "POSTROUTING", "-s", subnet, "!", "-d", clusterCIDR, "-j", MasqChain},
	}
}

// MakeNodesBridge creates the host bridge the extra nodes hang on, turns on forwarding on the machine and
// masquerades node 1's pods' traffic (podCIDR) that leaves the pod network (clusterCIDR; in place of the
// bridge plugin's).
func MakeNodesBridge(podCIDR, clusterCIDR string) error {
	steps := [][]string{
		{"link", "add", NodesBridge, "mtu", UnderlayMTU, "type", "bridge"},
		{"addr", "add", fmt.Sprintf("%s/%d", NodesGateway, nodesPrefixLen), "dev", NodesBridge},
		{"link", "set", NodesBridge, "up"},
	}
	for _, s := range steps {
		if err := run("ip", s...); err != nil {
			return fmt.Errorf("creating the %s bridge: %w", NodesBridge, err)
		}
	}
	if err := kernel.WriteSysctl(kernel.HostProc, "net/ipv4/ip_forward", "1"); err != nil {
		return fmt.Errorf("turning on ip_forward: %w", err)
	}
	for _, s := range PodMasquerade(podCIDR, clusterCIDR) {
		if err := run(s[0], s[1:]...); err != nil {
			return fmt.Errorf("masquerading node 1's pods: %w", err)
		}
	}
	return nil
}

// MakeNodeNetwork creates node n's namespace (a persistent one, bind-mounted by unshare: not `ip netns add`,
// which would also make /run/netns a shared mount of its own), its veth into the bridge, its address and
// default route, forwarding inside it, and the machine's route to its pods.
func MakeNodeNetwork(n ExtraNode, clusterCIDR string) error {
	if err := os.MkdirAll(netnsDir, 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(n.NetnsPath(), os.O_CREATE|os.O_EXCL|os.O_RDONLY, 0o444)
	if err != nil {
		return fmt.Errorf("creating the network namespace of %s: %w (tare lab down removes one left by an earlier lab)", n.Name, err)
	}
	f.Close()
	addr := fmt.Sprintf("%s/%d", n.Address, nodesPrefixLen)
	r := n.RoutedPodRoute()
	steps := [][]string{
		{"unshare", "--net=" + n.NetnsPath(), "true"},
		{"ip", "link", "add", n.Veth, "mtu", UnderlayMTU, "type", "veth", "peer", "name", "eth0", "mtu", UnderlayMTU, "netns", n.Name},
		{"ip", "link", "set", n.Veth, "master", NodesBridge, "up"},
		{"ip", "-n", n.Name, "link", "set", "lo", "up"},
		{"ip", "-n", n.Name, "addr", "add", addr, "dev", "eth0"},
		{"ip", "-n", n.Name, "link", "set", "eth0", "up"},
		{"ip", "-n", n.Name, "route", "add", "default", "via", NodesGateway},
		{"nsenter", "--net=" + n.NetnsPath(), "sysctl", "-q", "-w", "net.ipv4.ip_forward=1"},
		{"ip", "route", "add", r.Dst, "via", r.Via, "dev", r.Dev},
	}
	for _, m := range PodMasquerade(n.PodCIDR, clusterCIDR) {
		steps = append(steps, append([]string{"nsenter", "--net=" + n.NetnsPath()}, m...))
	}
	for _, s := range steps {
		if err := run(s[0], s[1:]...); err != nil {
			return fmt.Errorf("setting up the network of %s: %w", n.Name, err)
		}
	}
	return nil
}

// RemoveNodeNetworks deletes the extra nodes' namespaces (the recorded ones and any tare-node-* left by a
// lab whose state is lost), their veths and the tare-nodes bridge; the routes to the nodes go with it. Call
// it once every process in the namespaces has stopped.
func RemoveNodeNetworks(recorded []ExtraNode) error {
	var errs []error
	names := map[string]bool{}
	for _, n := range recorded {
		names[n.Name] = true
	}
	ents, _ := os.ReadDir(netnsDir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), nodeNetnsPrefix) {
			names[e.Name()] = true
		}
	}
	for name := range names {
		p := filepath.Join(netnsDir, name)
		if err := syscall.Unmount(p, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
			errs = append(errs, fmt.Errorf("unmounting %s: %w", p, err))
		}
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("removing %s: %w", p, err))
		}
	}
	links, err := LinkList()
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("listing links: %w", err))...)
	}
	for _, l := range links {
		if NodeLink(l.Attrs().Name) {
			if err := netlink.LinkDel(l); err != nil && !errors.Is(err, syscall.ENODEV) {
				errs = append(errs, fmt.Errorf("deleting link %s: %w", l.Attrs().Name, err))
			}
		}
	}
	return errors.Join(errs...)
}

// LinkList lists the machine's links (DumpAgain).
func LinkList() ([]netlink.Link, error) { return DumpAgain(netlink.LinkList) }

// DumpAgain runs a netlink dump again while it comes back interrupted: links change under it while the
// kernel tears down the namespaces down has just released (their veths go in the background).
func DumpAgain[T any](dump func() ([]T, error)) ([]T, error) {
	var err error
	for range 10 {
		var out []T
		if out, err = dump(); !errors.Is(err, netlink.ErrDumpInterrupted) {
			return out, err
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil, err
}

// NodeLink says whether a host link is the nodes' bridge or a node's veth.
func NodeLink(name string) bool { return strings.HasPrefix(name, nodeVethPrefix) }

// labNets are the address ranges of the lab's networks: pods, nodes and the overlay's VTEPs (vtep.go).
var labNets = []net.IPNet{
	{IP: net.IPv4(10, 244, 0, 0), Mask: net.CIDRMask(16, 32)}, // clusterCIDR
	{IP: net.IPv4(10, 250, 0, 0), Mask: net.CIDRMask(16, 32)},
	{IP: net.IPv4(10, 251, 0, 0), Mask: net.CIDRMask(16, 32)},
}

// NodeNetworkLeftovers lists the extra nodes' namespaces and links, and the machine's routes into the lab's
// networks through its links, still present.
func NodeNetworkLeftovers() []string {
	var out []string
	ents, _ := os.ReadDir(netnsDir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), nodeNetnsPrefix) {
			out = append(out, "network namespace "+e.Name())
		}
	}
	if links, err := LinkList(); err == nil {
		for _, l := range links {
			if NodeLink(l.Attrs().Name) {
				out = append(out, "link "+l.Attrs().Name)
			}
		}
	}
	if routes, err := DumpAgain(func() ([]netlink.Route, error) { return netlink.RouteList(nil, netlink.FAMILY_V4) }); err == nil {
		out = append(out, labRoutes(routes)...)
	}
	return out
}

// labRoutes picks the routes into the lab's networks through one of its links (tare…): another cluster's
// routes into 10.244.0.0/16 (flannel's, say) are not the lab's.
func labRoutes(routes []netlink.Route) []string {
	var out []string
	for _, r := range routes {
		if r.Dst == nil {
			continue
		}
		l, err := netlink.LinkByIndex(r.LinkIndex)
		if err != nil || !strings.HasPrefix(l.Attrs().Name, "tare") {
			continue
		}
		for _, n := range labNets {
			if n.Contains(r.Dst.IP) {
				out = append(out, "route "+r.Dst.String()+" dev "+l.Attrs().Name)
				break
			}
		}
	}
	return out
}
