package lab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"

	"github.com/tare-dev/tare/internal/lab/machine"
	"github.com/tare-dev/tare/internal/testenv"
)

// TestOverlayPlan checks what each overlay wants in each node's network for labs of 2 and 3 nodes.
func TestOverlayPlan(t *testing.T) {
	t.Parallel()
	m := machine.VTEP{Underlay: "tare-nodes", Local: "10.250.0.1", Address: "10.251.0.1", MAC: "0a:58:0a:fb:00:01", PodCIDR: "10.244.0.0/24"}
	n2 := machine.VTEP{Netns: "tare-node-2", Underlay: "eth0", Local: "10.250.0.3", Address: "10.251.0.3", MAC: "0a:58:0a:fb:00:03", PodCIDR: "10.244.1.0/24"}
	n3 := machine.VTEP{Netns: "tare-node-3", Underlay: "eth0", Local: "10.250.0.4", Address: "10.251.0.4", MAC: "0a:58:0a:fb:00:04", PodCIDR: "10.244.2.0/24"}
	via := func(v machine.VTEP) machine.PodRoute {
		return machine.PodRoute{Dst: v.PodCIDR, Via: v.Address, Dev: "tare-vx", OnLink: true}
	}
	tests := []struct {
		nodes int
		mode  Overlay
		want  []overlayEnd
	}{
		{2, OverlayVXLAN, []overlayEnd{
			{VTEP: &m, Peers: []machine.VTEP{n2}, Routes: []machine.PodRoute{via(n2)}},
			{Netns: "tare-node-2", VTEP: &n2, Peers: []machine.VTEP{m}, Routes: []machine.PodRoute{via(m)}},
		}},
		{3, OverlayVXLAN, []overlayEnd{
			{VTEP: &m, Peers: []machine.VTEP{n2, n3}, Routes: []machine.PodRoute{via(n2), via(n3)}},
			{Netns: "tare-node-2", VTEP: &n2, Peers: []machine.VTEP{m, n3}, Routes: []machine.PodRoute{via(m), via(n3)}},
			{Netns: "tare-node-3", VTEP: &n3, Peers: []machine.VTEP{m, n2}, Routes: []machine.PodRoute{via(m), via(n2)}},
		}},
		{2, OverlayRouted, []overlayEnd{
			{Routes: []machine.PodRoute{{Dst: "10.244.1.0/24", Via: "10.250.0.3", Dev: "tare-nodes"}}},
			{Netns: "tare-node-2"},
		}},
		{3, OverlayRouted, []overlayEnd{
			{Routes: []machine.PodRoute{{Dst: "10.244.1.0/24", Via: "10.250.0.3", Dev: "tare-nodes"}, {Dst: "10.244.2.0/24", Via: "10.250.0.4", Dev: "tare-nodes"}}},
			{Netns: "tare-node-2"},
			{Netns: "tare-node-3"},
		}},
	}
	for _, tt := range tests {
		got := overlayPlan(tt.mode, UpOptions{Nodes: tt.nodes}.extraNodes())
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s with %d nodes (-want +got):\n%s", tt.mode, tt.nodes, diff)
		}
	}
	// Routed is exactly what up makes: one home for the route (machine/nodenet.go).
	for _, n := range (UpOptions{Nodes: 3}).extraNodes() {
		if r := n.RoutedPodRoute(); r.Dst != n.PodCIDR || r.Via != n.Address || r.Dev != machine.NodesBridge || r.OnLink {
			t.Errorf("routed route to %s: %+v", n.Name, r)
		}
	}
}

// TestOverlayRefuses checks that SetOverlay and CurrentOverlay refuse a directory without a lab, a lab of
// one node, and a lab that is not running, saying what to do; and SetOverlay an unknown overlay.
func TestOverlayRefuses(t *testing.T) {
	t.Parallel()
	node := []ExtraNode{machine.NewExtraNode(99)} // no such namespace, whatever lab runs
	self := []Process{{Name: "kubelet", PID: os.Getpid()}}
	tests := []struct {
		name  string
		st    *State
		is    error
		wants string
	}{
		{"no lab", nil, ErrNotRunning, "tare lab up --nodes 2"},
		{"one node", &State{Ready: true, Processes: self}, ErrOneNode, "--nodes 2 or more"},
		{"starting", &State{ExtraNodes: node, Processes: self}, ErrNotRunning, "still starting"},
		{"stopped", &State{ExtraNodes: node, Ready: true}, ErrNotRunning, "processes have stopped"},
		{"namespace gone", &State{ExtraNodes: node, Ready: true, Processes: self}, ErrNotRunning, "tare-node-99 is gone"},
	}
	for _, tt := range tests {
		dir := t.TempDir()
		if tt.st != nil {
			tt.st.Version, tt.st.Dir = stateVersion, dir
			if err := tt.st.save(); err != nil {
				t.Fatal(err)
			}
		}
		_, cerr := at(dir).CurrentOverlay()
		for _, err := range []error{at(dir).SetOverlay(OverlayVXLAN), cerr} {
			if !errors.Is(err, tt.is) || !strings.Contains(fmt.Sprint(err), tt.wants) {
				t.Errorf("%s: %v, want %v saying %q", tt.name, err, tt.is, tt.wants)
			}
		}
	}
	if err := at(t.TempDir()).SetOverlay("geneve"); err == nil || !strings.Contains(err.Error(), "want routed or vxlan") {
		t.Errorf("at(geneve).SetOverlay(): %v", err)
	}
}

// TestOverlayNodeNetworks switches the networks of three nodes (as up makes them, without the rest of a
// lab) between routed and VXLAN three times: each switch takes under a second and can be repeated; in
// VXLAN mode every node has its VTEP and traffic from a node to the machine's VTEP is counted by it; back
// to routed, the routes are what up made and no VTEP is left; and Down, after a crash with the overlay on,
// leaves nothing.
func TestOverlayNodeNetworks(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	l := bareLab(ctx, t, 3)
	if err := l.nodeNetworks(); err != nil {
		t.Fatal(err)
	}
	nodes := l.st.ExtraNodes
	routed := routeTables(t, nodes)
	for round := 1; round <= 3; round++ {
		switchOverlay(t, OverlayVXLAN, nodes)
		switchOverlay(t, OverlayVXLAN, nodes) // again: nothing changes
		checkVTEPs(t, nodes)
		tunnelCounts(ctx, t, nodes[0])
		switchOverlay(t, OverlayRouted, nodes)
		switchOverlay(t, OverlayRouted, nodes)
		noVTEPs(t, nodes)
		if diff := cmp.Diff(routed, routeTables(t, nodes)); diff != "" {
			t.Errorf("round %d: routes after switching back to routed (-up made +now):\n%s", round, diff)
		}
	}
	// A crash with the overlay on: Down, from the state, removes the machine's VTEP too.
	l.st.Overlay = OverlayVXLAN
	if err := l.st.save(); err != nil {
		t.Fatal(err)
	}
	switchOverlay(t, OverlayVXLAN, nodes)
	if _, err := Down(ctx, l.opts.Dir, false); err != nil {
		t.Fatal(err)
	}
	if left := Leftovers(l.opts.Dir, true); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

// switchOverlay applies an overlay and checks that it took under a second.
func switchOverlay(t *testing.T, mode Overlay, nodes []ExtraNode) {
	t.Helper()
	start := time.Now()
	if err := applyOverlay(mode, nodes); err != nil {
		t.Fatalf("switching to %s: %v", mode, err)
	}
	took := time.Since(start)
	if took > time.Second {
		t.Errorf("switching to %s took %s, want under a second", mode, took)
	}
	t.Logf("switched to %s in %s", mode, took.Round(time.Microsecond))
	for _, n := range nodes {
		if got, err := routeOverlay(n.PodCIDR); err != nil || got != mode {
			t.Errorf("after switching to %s the machine routes %s as %q (%v)", mode, n.PodCIDR, got, err)
		}
	}
}

// routeTables are the routes into the lab's networks on the machine and in each node's namespace, from ip(8).
func routeTables(t *testing.T, nodes []ExtraNode) map[string][]string {
	t.Helper()
	out := map[string][]string{"": ipRoutes(t, "")}
	for _, n := range nodes {
		out[n.Name] = ipRoutes(t, n.Name)
	}
	return out
}

// ipRoutes lists the IPv4 routes of the main table of a namespace (empty: the machine's) that mention the
// lab's networks, as ip(8) prints them.
func ipRoutes(t *testing.T, netns string) []string {
	t.Helper()
	args := []string{"-4", "route", "show"}
	if netns != "" {
		args = append([]string{"-n", netns}, args...)
	}
	b, err := exec.Command("ip", args...).Output()
	if err != nil {
		t.Fatalf("ip %s: %v", strings.Join(args, " "), err)
	}
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if strings.Contains(l, "10.244.") || strings.Contains(l, "10.25") || strings.HasPrefix(l, "default") {
			out = append(out, strings.TrimSpace(l))
		}
	}
	return out
}

// checkVTEPs checks every node's VTEP as the kernel reports it: VXLAN 4242 on port 4789 from the node's
// address over its underlay, no learning, MTU 50 below the underlay's, and a permanent FDB entry per peer.
func checkVTEPs(t *testing.T, nodes []ExtraNode) {
	t.Helper()
	for _, e := range overlayPlan(OverlayVXLAN, nodes) {
		h, err := machine.NetnsHandle(e.Netns)
		if err != nil {
			t.Fatal(err)
		}
		defer h.Close()
		l, err := h.LinkByName(machine.VTEPName)
		if err != nil {
			t.Errorf("%s: %v", e.where(), err)
			continue
		}
		under, err := h.LinkByName(e.VTEP.Underlay)
		if err != nil {
			t.Fatal(err)
		}
		v, ok := l.(*netlink.Vxlan)
		if !ok || v.VxlanId != machine.VTEPVNI || v.Port != machine.VTEPPort || v.Learning || !v.SrcAddr.Equal(net.ParseIP(e.VTEP.Local)) ||
			v.VtepDevIndex != under.Attrs().Index || v.MTU != under.Attrs().MTU-VTEPOverhead || v.OperState == netlink.OperDown {
			t.Errorf("%s: %s is %+v, want VNI %d, port %d, local %s over %s, MTU %d, no learning, up", e.where(), machine.VTEPName, l,
				machine.VTEPVNI, machine.VTEPPort, e.VTEP.Local, e.VTEP.Underlay, under.Attrs().MTU-VTEPOverhead)
			continue
		}
		fdb, err := h.NeighList(l.Attrs().Index, unix.AF_BRIDGE)
		if err != nil {
			t.Fatal(err)
		}
		var got, want []string
		for _, f := range fdb {
			if f.State&netlink.NUD_PERMANENT != 0 && f.IP != nil {
				got = append(got, f.HardwareAddr.String()+" dst "+f.IP.String())
			}
		}
		for _, p := range e.Peers {
			want = append(want, p.MAC+" dst "+p.Local)
		}
		slices.Sort(got)
		slices.Sort(want)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: FDB of %s (-want +got):\n%s", e.where(), machine.VTEPName, diff)
		}
	}
}

// noVTEPs checks that no node has a VTEP.
func noVTEPs(t *testing.T, nodes []ExtraNode) {
	t.Helper()
	for _, e := range overlayPlan(OverlayRouted, nodes) {
		h, err := machine.NetnsHandle(e.Netns)
		if err != nil {
			t.Fatal(err)
		}
		if l, err := machine.FindLink(h, machine.VTEPName); err != nil || l != nil {
			t.Errorf("%s: %s still there after switching to routed (%v)", e.where(), machine.VTEPName, err)
		}
		h.Close()
	}
}

// tunnelCounts sends data from a node's namespace to the machine's VTEP address and back, and checks that
// the machine's VTEP counted at least as many bytes each way: the traffic went through the tunnel.
func tunnelCounts(ctx context.Context, t *testing.T, from ExtraNode) {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(nodeVTEPs(nil)[0].Address, "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	const size = 64 << 10
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = io.Copy(c, io.LimitReader(c, size))
	}()
	before := vtepBytes(t)
	c, err := testenv.DialFrom(from.NetnsPath())(ctx, "tcp", ln.Addr().String())
	if err != nil {
		t.Fatalf("dialling the machine's VTEP from %s: %v", from.Name, err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	go func() { _, _ = c.Write(make([]byte, size)) }()
	n, err := io.Copy(io.Discard, c)
	if err != nil || n != size {
		t.Fatalf("echo through the tunnel from %s: %d of %d bytes: %v", from.Name, n, size, err)
	}
	after := vtepBytes(t)
	if rx, tx := after.RxBytes-before.RxBytes, after.TxBytes-before.TxBytes; rx < size || tx < size {
		t.Errorf("%d bytes each way from %s, but the machine's %s received %d and sent %d", size, from.Name, machine.VTEPName, rx, tx)
	}
}

// vtepBytes reads the machine's VTEP's counters.
func vtepBytes(t *testing.T) netlink.LinkStatistics {
	t.Helper()
	return *vtepLink(t).Attrs().Statistics
}

// vtepLink is the machine's VTEP.
func vtepLink(t *testing.T) netlink.Link {
	t.Helper()
	l, err := netlink.LinkByName(machine.VTEPName)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// checkOverlay switches a running three-node lab between routed and VXLAN three times, leaving it in VXLAN
// mode (so that the caller's Down proves it removes the overlay): a pod on node 1 reaches a pod on node 2
// in both modes, through the machine's VTEP (its counters grow by at least the bytes exchanged) in VXLAN
// mode and through no VTEP in routed mode, and switching back puts back the routes up made.
func checkOverlay(ctx context.Context, t *testing.T, st *State, pod1, pod2 *corev1.Pod) {
	t.Helper()
	if got, err := at(st.Dir).CurrentOverlay(); err != nil || got != OverlayRouted {
		t.Errorf("a new lab's overlay: %q, %v; want routed", got, err)
	}
	routed := routeTables(t, st.ExtraNodes)
	var sent, got atomic.Int64
	c := podNetnsClient(t, podPID(t, st, pod1))
	tr := c.Transport.(*http.Transport)
	dial := tr.DialContext
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return countingConn{Conn: conn, read: &got, written: &sent}, nil
	}
	// The web app echoes the path: 3000 bytes each way, more than one packet in the tunnel's MTU.
	url := "http://" + net.JoinHostPort(pod2.Status.PodIP, "8080") + "/" + strings.Repeat("x", 3000)
	set := func(mode Overlay) {
		t.Helper()
		start := time.Now()
		if err := at(st.Dir).SetOverlay(mode); err != nil {
			t.Fatal(err)
		}
		took := time.Since(start)
		if took > time.Second {
			t.Errorf("switching to %s took %s, want under a second", mode, took)
		}
		t.Logf("switched the lab to %s in %s", mode, took.Round(time.Microsecond))
		if now, err := at(st.Dir).CurrentOverlay(); err != nil || now != mode {
			t.Errorf("after switching to %s the overlay is %q (%v)", mode, now, err)
		}
	}
	for round := 1; round <= 3; round++ {
		set(OverlayVXLAN)
		get(ctx, t, "pod on node 1 → pod on node 2 over VXLAN", c, url, pod2.Name)
		before := vtepBytes(t)
		sent.Store(0)
		got.Store(0)
		exchange(ctx, t, c, url, pod2.Name)
		after := vtepBytes(t)
		if sent.Load() < 3000 || got.Load() < 3000 {
			t.Errorf("round %d: the pod sent %d bytes and received %d, want 3000 or more each way", round, sent.Load(), got.Load())
		}
		if tx, rx := after.TxBytes-before.TxBytes, after.RxBytes-before.RxBytes; tx < uint64(sent.Load()) || rx < uint64(got.Load()) {
			t.Errorf("round %d: the pod sent %d bytes and received %d, but the machine's %s sent %d and received %d",
				round, sent.Load(), got.Load(), machine.VTEPName, tx, rx)
		}
		routeThrough(t, pod2.Status.PodIP, machine.VTEPName)
		set(OverlayRouted)
		noVTEPs(t, st.ExtraNodes)
		routeThrough(t, pod2.Status.PodIP, machine.NodesBridge)
		get(ctx, t, "pod on node 1 → pod on node 2 routed", c, url, pod2.Name)
		if diff := cmp.Diff(routed, routeTables(t, st.ExtraNodes)); diff != "" {
			t.Errorf("round %d: routes after switching back to routed (-up made +now):\n%s", round, diff)
		}
	}
	set(OverlayVXLAN)
	get(ctx, t, "pod on node 1 → pod on node 2 over VXLAN", c, url, pod2.Name)
}

// routeThrough checks that the machine routes to ip through the link dev, as the kernel says.
func routeThrough(t *testing.T, ip, dev string) {
	t.Helper()
	r, err := netlink.RouteGet(net.ParseIP(ip))
	if err != nil || len(r) != 1 {
		t.Fatalf("the machine's route to %s: %v (%v)", ip, r, err)
	}
	if l, err := netlink.LinkByIndex(r[0].LinkIndex); err != nil || l.Attrs().Name != dev {
		t.Errorf("the machine routes %s through link %d (%v), want %s", ip, r[0].LinkIndex, err, dev)
	}
}

// exchange makes one request and checks that the answer comes from want.
func exchange(ctx context.Context, t *testing.T, c *http.Client, url, want string) {
	t.Helper()
	start := time.Now()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %.40s… after %s: %v", url, time.Since(start), err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || !strings.HasPrefix(string(b), want+" ") {
		t.Fatalf("GET %.40s…: %s %.40q, %v; want an answer from %s", url, resp.Status, b, err, want)
	}
}

// countingConn counts the bytes read and written on a connection.
type countingConn struct {
	net.Conn
	read, written *atomic.Int64
}

func (c countingConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.read.Add(int64(n))
	return n, err
}

// Write counts the bytes before they go: the answer to them cannot come (and the caller reset the count
// for the next exchange) before they are counted.
func (c countingConn) Write(b []byte) (int, error) {
	c.written.Add(int64(len(b)))
	n, err := c.Conn.Write(b)
	c.written.Add(int64(n - len(b)))
	return n, err
}
