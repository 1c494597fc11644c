package lab

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strings"

	"github.com/vishvananda/netlink"

	"github.com/tare-dev/tare/internal/lab/machine"
)

// The pod network between the nodes of a lab with extra nodes, switched while the lab runs so that a
// measurement compares the same pod pair routed and encapsulated, one variable at a time.
//
// Routed (the lab's default, machine/nodenet.go): the machine routes each extra node's pod range to the node's
// address, and the nodes send everything else to the machine.
//
// VXLAN, as flannel's vxlan backend: each node has a VTEP named tare-vx (machine/vtep.go), on the machine over
// tare-nodes with local 10.250.0.1, in each node's namespace over eth0 with local the node's address; VNI
// 4242, UDP port 4789, learning off, MTU 50 below its underlay's (outer IP, UDP, VXLAN and inner Ethernet
// headers). A VTEP's overlay address is its underlay address's host part in 10.251.0.0/24 and its MAC is
// 0a:58 followed by that address (as OVN-Kubernetes derives them), so every entry is static: for each peer a
// permanent neighbour (overlay address → MAC), an FDB entry (MAC → the peer's underlay address) and a route
// to the peer's pod range via its overlay address, onlink. Every pair of nodes has its tunnel: node 2's
// pods reach node 3's across the bridge, not routed by the machine as when routed. The pods keep their
// MTU (1500): the underlay between the nodes is 1550 (machine.UnderlayMTU), so the VTEPs carry 1500
// and a pod's full-size packet fits the tunnel as it fits the routed path; switching changes the
// encapsulation alone, not the path MTU.
//
// SetOverlay records the mode in the state before it makes a device. Down deletes the machine's tare-vx
// whatever the state says (the nodes' go with their namespaces) and Leftovers reports one left behind.

// Overlay is how pod traffic crosses between the lab's nodes.
type Overlay string

// The overlays SetOverlay switches between.
const (
	OverlayRouted Overlay = "routed" // plain routing through the machine, the lab's default
	OverlayVXLAN  Overlay = "vxlan"  // a VXLAN tunnel between every pair of nodes
)

// ErrOneNode says the lab has no extra node to tunnel to.
var ErrOneNode = errors.New("the overlay needs a lab with --nodes 2 or more")

// VTEPOverhead is what the VXLAN tunnel adds to a pod's packet (machine.VTEPOverhead).
const VTEPOverhead = machine.VTEPOverhead

// SetOverlay switches the pod traffic between the nodes of the running lab to mode. It is
// idempotent and takes well under a second (deleting the VTEPs, the slowest part, some tens of
// milliseconds); each step leaves every pod reachable (routes switch in place, and a
// node sends into the tunnel only once every VTEP exists). It needs root. Calls for one lab must not
// overlap.
func (l *Lab) SetOverlay(mode Overlay) error {
	if mode != OverlayRouted && mode != OverlayVXLAN {
		return fmt.Errorf("overlay %q: want %s or %s", mode, OverlayRouted, OverlayVXLAN)
	}
	st, err := l.overlayLab()
	if err != nil {
		return err
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("switching the overlay changes the machine's network: run as root: %w", ErrPrerequisite)
	}
	if mode == OverlayVXLAN { // recorded before any device exists, so that down looks for them
		st.Overlay = mode
		if err := st.save(); err != nil {
			return err
		}
	}
	if err := applyOverlay(mode, st.ExtraNodes); err != nil {
		return fmt.Errorf("switching the lab in %s to %s (tare lab down removes what is left): %w", st.Dir, mode, err)
	}
	st.Overlay = mode
	return st.save()
}

// CurrentOverlay says how pod traffic crosses between the nodes of the running lab, from the
// machine's routes to the extra nodes' pod ranges; it fails when those disagree with each other or with
// the mode recorded (a switch that failed half-way).
func (l *Lab) CurrentOverlay() (Overlay, error) {
	st, err := l.overlayLab()
	if err != nil {
		return "", err
	}
	recorded := st.overlay()
	var modes []string
	seen := map[Overlay]bool{}
	for _, n := range st.ExtraNodes {
		m, err := routeOverlay(n.PodCIDR)
		if err != nil {
			return "", err
		}
		seen[m] = true
		modes = append(modes, n.PodCIDR+" "+string(m))
	}
	if len(seen) == 1 && seen[recorded] {
		return recorded, nil
	}
	return "", fmt.Errorf("the lab in %s is between overlays (recorded %s; the machine routes %s): set the overlay again",
		st.Dir, recorded, strings.Join(modes, ", "))
}

// overlay is the recorded overlay: routed unless SetOverlay chose another.
func (s *State) overlay() Overlay {
	if s.Overlay == "" {
		return OverlayRouted
	}
	return s.Overlay
}

// overlayLab reads the lab's state again and checks that it runs with extra nodes whose namespaces exist.
func (l *Lab) overlayLab() (*State, error) {
	st, err := l.running("the overlay needs one started with tare lab up --nodes 2 or more")
	if err != nil {
		return nil, err
	}
	if len(st.ExtraNodes) == 0 {
		return nil, fmt.Errorf("the lab in %s has one node: %w (tare lab down, then tare lab up --nodes 2)", st.Dir, ErrOneNode)
	}
	return st, nil
}

// overlayEnd is what an overlay wants in one node's network: its VTEP (nil: none), the neighbour and FDB
// entries of each peer VTEP on it, and the routes to the other nodes' pod ranges that the overlay sets
// (a node's other routes are up's, and none of an overlay's business).
type overlayEnd struct {
	Netns  string
	VTEP   *machine.VTEP
	Peers  []machine.VTEP
	Routes []machine.PodRoute
}

// nodeVTEPs are the VTEPs of node 1 and the extra nodes, in that order.
func nodeVTEPs(nodes []ExtraNode) []machine.VTEP {
	out := []machine.VTEP{newVTEP("", machine.NodesBridge, machine.NodesGateway, podCIDR)}
	for _, n := range nodes {
		out = append(out, newVTEP(n.Name, "eth0", n.Address, n.PodCIDR))
	}
	return out
}

// newVTEP derives a VTEP's overlay address and MAC from its underlay address.
func newVTEP(netns, underlay, local, pods string) machine.VTEP {
	ip := net.ParseIP(local).To4()
	addr := net.IPv4(10, 251, 0, ip[3]).To4()
	mac := net.HardwareAddr{0x0a, 0x58, addr[0], addr[1], addr[2], addr[3]}
	return machine.VTEP{Netns: netns, Underlay: underlay, Local: local, Address: addr.String(), MAC: mac.String(), PodCIDR: pods}
}

// overlayPlan is what mode wants in each node's network, node 1's first: in vxlan mode a VTEP on every
// node, every other VTEP its peer and its pod range routed through it; routed, the machine's routes of up
// and no VTEP.
func overlayPlan(mode Overlay, nodes []ExtraNode) []overlayEnd {
	vteps := nodeVTEPs(nodes)
	out := make([]overlayEnd, len(vteps))
	for i, v := range vteps {
		out[i].Netns = v.Netns
		if mode != OverlayVXLAN {
			continue
		}
		out[i].VTEP = &vteps[i]
		for j, p := range vteps {
			if j == i {
				continue
			}
			out[i].Peers = append(out[i].Peers, p)
			out[i].Routes = append(out[i].Routes, machine.PodRoute{Dst: p.PodCIDR, Via: p.Address, Dev: machine.VTEPName, OnLink: true})
		}
	}
	if mode == OverlayRouted {
		for _, n := range nodes {
			out[0].Routes = append(out[0].Routes, n.RoutedPodRoute())
		}
	}
	return out
}

// applyOverlay makes the node networks what mode wants, in an order that keeps every pod reachable: to
// vxlan, every VTEP and its entries first, then the routes into them; to routed, the machine's routes
// first, then the nodes' VTEPs (with their routes), the machine's last.
func applyOverlay(mode Overlay, nodes []ExtraNode) error {
	plan := overlayPlan(mode, nodes)
	hs := make([]*netlink.Handle, len(plan))
	defer func() {
		for _, h := range hs {
			if h != nil {
				h.Close()
			}
		}
	}()
	for i, e := range plan {
		h, err := machine.NetnsHandle(e.Netns)
		if err != nil {
			return err
		}
		hs[i] = h
	}
	if mode == OverlayVXLAN {
		for i, e := range plan {
			if err := machine.MakeVTEP(hs[i], *e.VTEP, e.Peers); err != nil {
				return fmt.Errorf("%s: %w", e.where(), err)
			}
		}
	}
	for i, e := range plan {
		for _, r := range e.Routes {
			if err := machine.ReplaceRoute(hs[i], r); err != nil {
				return fmt.Errorf("%s: %w", e.where(), err)
			}
		}
	}
	if mode == OverlayRouted {
		for i := len(plan) - 1; i >= 0; i-- {
			if err := machine.DeleteVTEP(hs[i]); err != nil {
				return fmt.Errorf("%s: %w", plan[i].where(), err)
			}
		}
	}
	return nil
}

// where names the network of an end in errors.
func (e overlayEnd) where() string {
	if e.Netns == "" {
		return "the machine"
	}
	return e.Netns
}

// routeOverlay says which overlay the machine's route to a node's pod range takes.
func routeOverlay(cidr string) (Overlay, error) {
	link, err := machine.RouteLink(cidr)
	if err != nil {
		return "", err
	}
	switch link {
	case machine.VTEPName:
		return OverlayVXLAN, nil
	case machine.NodesBridge:
		return OverlayRouted, nil
	}
	return "", fmt.Errorf("the machine routes %s through %s, neither %s nor %s", cidr, link, machine.VTEPName, machine.NodesBridge)
}
