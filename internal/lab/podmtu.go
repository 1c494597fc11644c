package lab

import (
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/tare-dev/tare/internal/kernel"
	"github.com/tare-dev/tare/internal/lab/machine"
)

// The pod network's MTU, switched while the lab runs (tare datapath net --mtu), as the seed's jumbo-frame
// tuning did: every pod's eth0 and its veth on the node, each node's pod bridge (tare0), the VTEPs of the
// VXLAN overlay, and the underlay between the nodes (the tare-nodes bridge and the nodes' veths, kept 50
// bytes above the pods' so that a pod's full-size packet fits the tunnel as it fits the routed path; see
// overlay.go). Pods started while another MTU is set get the CNI plugin's default: set it after they start.

// DefaultPodMTU is the pod network's MTU as up makes it: the bridge plugin's default.
const DefaultPodMTU = 1500

// MinPodMTU and MaxPodMTU bound SetPodMTU: IPv6's minimum, and the usual jumbo frame (with the tunnel's
// 50 bytes the underlay stays below what every driver here takes).
const (
	MinPodMTU = 1280
	MaxPodMTU = 9000
)

const mtuNeed = "the pod MTU is set on one started with tare lab up"

// mtuLink is one link whose MTU SetPodMTU sets: in a namespace (empty: the machine's), by name.
type mtuLink struct {
	netns, name string
	mtu         int
}

// SetPodMTU sets the MTU of the pod network of the running lab (see above) and returns the one
// it had. It needs root. Raising, the underlay goes first and the pods last; lowering, the other way
// round, so that no tunnel is ever wider than its underlay. Calls for one lab must not overlap each other
// or SetOverlay.
func (l *Lab) SetPodMTU(mtu int) (old int, err error) {
	if mtu < MinPodMTU || mtu > MaxPodMTU {
		return 0, fmt.Errorf("pod MTU %d: want %d to %d", mtu, MinPodMTU, MaxPodMTU)
	}
	st, err := l.running(mtuNeed)
	if err != nil {
		return 0, err
	}
	if os.Geteuid() != 0 {
		return 0, fmt.Errorf("setting the pod network's MTU changes the machine's network: run as root: %w", ErrPrerequisite)
	}
	if old, err = linkMTU("", bridgeName); err != nil {
		return 0, fmt.Errorf("reading the pod network's MTU: %w", err)
	}
	links, err := podNetworkLinks(st, mtu)
	if err != nil {
		return old, err
	}
	if mtu < old {
		slices.Reverse(links)
	}
	for _, l := range links {
		if err := setLinkMTU(l); err != nil {
			return old, fmt.Errorf("setting the lab's pod MTU to %d (tare lab down removes the network): %w", mtu, err)
		}
	}
	return old, nil
}

// PodMTU is the MTU of the pod network of the running lab: its pod bridge's on the machine.
func (l *Lab) PodMTU() (int, error) {
	if _, err := l.running(mtuNeed); err != nil {
		return 0, err
	}
	return linkMTU("", bridgeName)
}

// podNetworkLinks lists the links of the lab's pod network with the MTU each takes for pod MTU mtu, in the
// order of a raise: the underlay (ports, then bridge), the VTEPs, each node's pods' veths and bridge, the
// pods' eth0.
func podNetworkLinks(st *State, mtu int) ([]mtuLink, error) {
	under := mtu + VTEPOverhead
	var out []mtuLink
	nodes := []string{""}
	if len(st.ExtraNodes) > 0 {
		ports, err := bridgePorts("", machine.NodesBridge)
		if err != nil {
			return nil, err
		}
		for _, p := range ports {
			out = append(out, mtuLink{"", p, under})
		}
		out = append(out, mtuLink{"", machine.NodesBridge, under}) // after its ports: kernels before 4.17 keep a bridge at or below its smallest port
		for _, n := range st.ExtraNodes {
			out = append(out, mtuLink{n.Name, "eth0", under})
			nodes = append(nodes, n.Name)
		}
	}
	for _, ns := range nodes {
		if ok, err := hasLink(ns, machine.VTEPName); err != nil {
			return nil, err
		} else if ok {
			out = append(out, mtuLink{ns, machine.VTEPName, mtu})
		}
	}
	for _, ns := range nodes {
		ok, err := hasLink(ns, bridgeName)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue // a node with no pod yet: the plugin makes its bridge with the first
		}
		ports, err := bridgePorts(ns, bridgeName)
		if err != nil {
			return nil, err
		}
		for _, p := range ports {
			out = append(out, mtuLink{ns, p, mtu})
		}
		out = append(out, mtuLink{ns, bridgeName, mtu})
	}
	for _, ns := range machine.NewPodNetns(st.NetnsBefore) {
		if ok, err := hasLink(ns, "eth0"); err != nil {
			return nil, err
		} else if ok {
			out = append(out, mtuLink{ns, "eth0", mtu})
		}
	}
	return out, nil
}

// bridgePorts names the links enslaved to a bridge, in a namespace.
func bridgePorts(ns, bridge string) ([]string, error) {
	h, err := machine.NetnsHandle(ns)
	if err != nil {
		return nil, err
	}
	defer h.Close()
	br, err := h.LinkByName(bridge)
	if err != nil {
		return nil, fmt.Errorf("finding %s%s: %w", bridge, where(ns), err)
	}
	links, err := machine.DumpAgain(h.LinkList)
	if err != nil {
		return nil, fmt.Errorf("listing the links%s: %w", where(ns), err)
	}
	var out []string
	for _, l := range links {
		if l.Attrs().MasterIndex == br.Attrs().Index {
			out = append(out, l.Attrs().Name)
		}
	}
	slices.Sort(out)
	return out, nil
}

// hasLink says whether a namespace has a link of that name.
func hasLink(ns, name string) (bool, error) {
	h, err := machine.NetnsHandle(ns)
	if err != nil {
		return false, err
	}
	defer h.Close()
	l, err := machine.FindLink(h, name)
	return l != nil, err
}

// setLinkMTU sets one link's MTU, unless it has it already.
func setLinkMTU(m mtuLink) error {
	h, err := machine.NetnsHandle(m.netns)
	if err != nil {
		return err
	}
	defer h.Close()
	l, err := h.LinkByName(m.name)
	if err != nil {
		return fmt.Errorf("finding %s%s: %w", m.name, where(m.netns), err)
	}
	if l.Attrs().MTU == m.mtu {
		return nil
	}
	if err := h.LinkSetMTU(l, m.mtu); err != nil {
		return fmt.Errorf("setting the MTU of %s%s to %d: %w", m.name, where(m.netns), m.mtu, err)
	}
	return nil
}

// linkMTU reads one link's MTU: from sysfs in this network namespace (ns ""), over netlink in ns.
func linkMTU(ns, name string) (int, error) {
	if ns == "" {
		return kernel.LinkMTU(kernel.HostSys, name)
	}
	h, err := machine.NetnsHandle(ns)
	if err != nil {
		return 0, err
	}
	defer h.Close()
	l, err := h.LinkByName(name)
	if err != nil {
		return 0, err
	}
	return l.Attrs().MTU, nil
}

func where(ns string) string {
	if ns == "" {
		return ""
	}
	return " in " + ns
}

// running reads the lab's state again and checks that it runs: ready, its processes up, its nodes'
// namespaces there. need says what needs it when no lab is there.
func (l *Lab) running(need string) (*State, error) {
	dir := l.Dir
	st, err := l.fresh()
	if errors.Is(err, ErrNotRunning) {
		return nil, fmt.Errorf("%w in %s: %s", ErrNotRunning, dir, need)
	}
	if err != nil {
		return nil, err
	}
	var why string
	switch {
	case !st.Ready:
		why = "it is still starting, or its start failed"
	case len(st.Running()) == 0:
		why = "its processes have stopped"
	default:
		for _, n := range st.ExtraNodes {
			if _, err := os.Stat(n.NetnsPath()); err != nil {
				why = "the network namespace of " + n.Name + " is gone"
				break
			}
		}
	}
	if why != "" {
		return nil, fmt.Errorf("%w running in %s: %s (tare lab status shows what runs; tare lab down, then tare lab up --nodes %d)",
			ErrNotRunning, dir, why, len(st.ExtraNodes)+1)
	}
	return st, nil
}
