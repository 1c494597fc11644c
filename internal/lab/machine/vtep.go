package machine

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"path/filepath"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// The VTEPs of the VXLAN overlay (planned by lab's overlay.go) and their undo, with netlink: in a node's namespace through
// a handle whose sockets were opened in /run/netns/NAME, so no goroutine of tare's moves into it. Down
// deletes the machine's VTEP (RemoveMachineVTEP); the nodes' go with their namespaces.

// The overlay's VTEPs: their device name, VXLAN network identifier, UDP port and network's prefix length.
const (
	VTEPName   = "tare-vx"
	VTEPVNI    = 4242
	VTEPPort   = 4789
	OverlayLen = 24 // the VTEPs' network, 10.251.0.0/24
)

// VTEPOverhead is what the VXLAN tunnel adds to a pod's packet: outer IPv4 (20), UDP (8), VXLAN (8) and
// inner Ethernet (14) headers. The underlay's MTU stays this far above the pod network's.
const VTEPOverhead = 50

// VTEP is one node's end of the VXLAN overlay.
type VTEP struct {
	Netns    string // the node's network namespace; empty for node 1, the machine
	Underlay string // the link the tunnel runs over
	Local    string // the underlay address
	Address  string // the overlay address, in 10.251.0.0/24
	MAC      string
	PodCIDR  string
}

// NetnsHandle opens a netlink handle in a node's network namespace (name empty: the machine's). The caller
// closes it.
func NetnsHandle(name string) (*netlink.Handle, error) {
	if name == "" {
		h, err := netlink.NewHandle()
		if err != nil {
			return nil, fmt.Errorf("opening a netlink socket: %w", err)
		}
		return h, nil
	}
	p := filepath.Join(netnsDir, name)
	ns, err := netns.GetFromPath(p)
	if err != nil {
		return nil, fmt.Errorf("opening the network namespace %s: %w", p, err)
	}
	defer func() { _ = ns.Close() }() // the handle's sockets stay in the namespace
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		return nil, fmt.Errorf("opening a netlink socket in %s: %w", p, err)
	}
	return h, nil
}

// MakeVTEP makes (or keeps, when it is already so) the VTEP v, with its address, up, and the neighbour and
// FDB entries of its peers. A tare-vx made otherwise (another VNI, port, underlay or MAC) is made again.
func MakeVTEP(h *netlink.Handle, v VTEP, peers []VTEP) error {
	under, err := h.LinkByName(v.Underlay)
	if err != nil {
		return fmt.Errorf("finding the underlay %s: %w", v.Underlay, err)
	}
	want := &netlink.Vxlan{
		LinkAttrs: netlink.LinkAttrs{Name: VTEPName, MTU: under.Attrs().MTU - VTEPOverhead, HardwareAddr: mustMAC(v.MAC)},
		VxlanId:   VTEPVNI, VtepDevIndex: under.Attrs().Index, SrcAddr: net.ParseIP(v.Local), Port: VTEPPort,
	}
	l, err := FindLink(h, VTEPName)
	if err != nil {
		return err
	}
	if l != nil && !sameVTEP(l, want) {
		if err := h.LinkDel(l); err != nil {
			return fmt.Errorf("deleting a %s made otherwise: %w", VTEPName, err)
		}
		l = nil
	}
	if l == nil {
		if err := h.LinkAdd(want); err != nil {
			return fmt.Errorf("adding %s (VXLAN %d, port %d, over %s): %w", VTEPName, VTEPVNI, VTEPPort, v.Underlay, err)
		}
		if l, err = h.LinkByName(VTEPName); err != nil {
			return fmt.Errorf("finding the new %s: %w", VTEPName, err)
		}
	}
	if l.Attrs().MTU != want.MTU {
		if err := h.LinkSetMTU(l, want.MTU); err != nil {
			return fmt.Errorf("setting the MTU of %s to %d: %w", VTEPName, want.MTU, err)
		}
	}
	addr := &netlink.Addr{IPNet: &net.IPNet{IP: net.ParseIP(v.Address), Mask: net.CIDRMask(OverlayLen, 32)}}
	if err := h.AddrReplace(l, addr); err != nil {
		return fmt.Errorf("addressing %s %s: %w", VTEPName, addr.IPNet, err)
	}
	if err := h.LinkSetUp(l); err != nil {
		return fmt.Errorf("setting %s up: %w", VTEPName, err)
	}
	idx := l.Attrs().Index
	for _, p := range peers {
		mac := mustMAC(p.MAC)
		neigh := &netlink.Neigh{LinkIndex: idx, Family: unix.AF_INET, State: netlink.NUD_PERMANENT, Type: unix.RTN_UNICAST,
			IP: net.ParseIP(p.Address), HardwareAddr: mac}
		if err := h.NeighSet(neigh); err != nil {
			return fmt.Errorf("adding the neighbour %s %s on %s: %w", p.Address, mac, VTEPName, err)
		}
		fdb := &netlink.Neigh{LinkIndex: idx, Family: unix.AF_BRIDGE, State: netlink.NUD_PERMANENT, Flags: netlink.NTF_SELF,
			IP: net.ParseIP(p.Local), HardwareAddr: mac}
		if err := h.NeighSet(fdb); err != nil {
			return fmt.Errorf("adding the FDB entry %s dst %s on %s: %w", mac, p.Local, VTEPName, err)
		}
	}
	return nil
}

// sameVTEP says whether an existing link is the VTEP want, but for its MTU.
func sameVTEP(l netlink.Link, want *netlink.Vxlan) bool {
	v, ok := l.(*netlink.Vxlan)
	return ok && v.VxlanId == want.VxlanId && v.VtepDevIndex == want.VtepDevIndex && v.SrcAddr.Equal(want.SrcAddr) &&
		v.Port == want.Port && !v.Learning && bytes.Equal(v.HardwareAddr, want.HardwareAddr)
}

// mustMAC parses a MAC of newVTEP's making.
func mustMAC(s string) net.HardwareAddr {
	mac, err := net.ParseMAC(s)
	if err != nil {
		panic(fmt.Sprintf("a VTEP's MAC %q: %v", s, err))
	}
	return mac
}

// FindLink returns the link named name, or nil if there is none.
func FindLink(h *netlink.Handle, name string) (netlink.Link, error) {
	l, err := h.LinkByName(name)
	var nf netlink.LinkNotFoundError
	if errors.As(err, &nf) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("finding %s: %w", name, err)
	}
	return l, nil
}

// ReplaceRoute sets r in the main table, in place of any route to the same range.
func ReplaceRoute(h *netlink.Handle, r PodRoute) error {
	l, err := h.LinkByName(r.Dev)
	if err != nil {
		return fmt.Errorf("finding %s: %w", r.Dev, err)
	}
	_, dst, err := net.ParseCIDR(r.Dst)
	if err != nil {
		return err
	}
	route := &netlink.Route{LinkIndex: l.Attrs().Index, Dst: dst, Gw: net.ParseIP(r.Via)}
	if r.OnLink {
		route.Flags = int(netlink.FLAG_ONLINK)
	}
	if err := h.RouteReplace(route); err != nil {
		return fmt.Errorf("routing %s via %s dev %s: %w", r.Dst, r.Via, r.Dev, err)
	}
	return nil
}

// DeleteVTEP deletes the VTEP, if there is one; its address, neighbours, FDB entries and routes go with it.
func DeleteVTEP(h *netlink.Handle) error {
	l, err := FindLink(h, VTEPName)
	if err != nil || l == nil {
		return err
	}
	if err := h.LinkDel(l); err != nil {
		return fmt.Errorf("deleting %s: %w", VTEPName, err)
	}
	return nil
}

// RouteLink names the link of the machine's one route to a node's pod range.
func RouteLink(cidr string) (string, error) {
	_, dst, err := net.ParseCIDR(cidr)
	if err != nil {
		return "", err
	}
	routes, err := DumpAgain(func() ([]netlink.Route, error) {
		return netlink.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Dst: dst}, netlink.RT_FILTER_DST)
	})
	if err != nil {
		return "", fmt.Errorf("listing the machine's routes to %s: %w", cidr, err)
	}
	if len(routes) != 1 {
		return "", fmt.Errorf("the machine has %d routes to %s, want 1 (tare lab down, then tare lab up)", len(routes), cidr)
	}
	l, err := netlink.LinkByIndex(routes[0].LinkIndex)
	if err != nil {
		return "", fmt.Errorf("finding the link of the route to %s: %w", cidr, err)
	}
	return l.Attrs().Name, nil
}

// RemoveMachineVTEP deletes the machine's VTEP, whatever the state says.
func RemoveMachineVTEP() error {
	h, err := NetnsHandle("")
	if err != nil {
		return err
	}
	defer h.Close()
	return DeleteVTEP(h)
}

// VTEPLeftovers lists the machine's VTEP if it is still there.
func VTEPLeftovers() []string {
	if HasLink(VTEPName) {
		return []string{"link " + VTEPName}
	}
	return nil
}
