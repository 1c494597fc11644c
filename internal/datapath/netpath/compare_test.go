package netpath

import (
	"math"
	"slices"
	"testing"
)

func lane(p Path, copy int) Lane { return Lane{Path: p, Copy: copy, Mode: TCPStream, Size: 1024} }

func trialsWith(l Lane, gbps ...float64) []Trial {
	var out []Trial
	for _, g := range gbps {
		out = append(out, Trial{Slot: Slot{Lane: l}, Outcome: Outcome{Gbps: g}, NodeBusy: 1000, CPUPerUnit: 1 / g})
	}
	return out
}

// A path at exactly half the host's throughput in every trial: the pairwise log-ratios are log ½ plus a
// set symmetric around 0, so the Hodges–Lehmann ratio is ½ exactly and, with 5 against 5 that do not
// overlap, Mann–Whitney's exact two-sided p is 2/252. CPU per Gbit doubles.
func TestCompareHalf(t *testing.T) {
	host := []float64{10, 11, 12, 13, 14}
	var half []float64
	for _, g := range host {
		half = append(half, g/2)
	}
	ts := append(trialsWith(lane(Host, 1), host...), trialsWith(lane(VXLAN, 1), half...)...)
	ts = append(ts, Trial{Slot: Slot{Lane: lane(VXLAN, 1)}, Error: "iperf3: connection refused"})
	rs := Compare(ts, "host")
	if len(rs) != 2 {
		t.Fatalf("%d ratios: %+v", len(rs), rs)
	}
	g := rs[0]
	if g.Metric != "gbps" || math.Abs(g.Ratio-0.5) > 1e-12 || g.N != 5 || !g.Significant || math.Abs(g.P-2.0/252) > 1e-12 || g.Median != 6 || g.Base != 12 {
		t.Errorf("gbps: %+v", g)
	}
	if g.Lo > 0.5 || g.Hi < 0.5 || g.Hi >= 1 {
		t.Errorf("interval [%v, %v]", g.Lo, g.Hi)
	}
	if c := rs[1]; c.Metric != "cpu_per_unit" || math.Abs(c.Ratio-2) > 1e-12 || !c.Significant {
		t.Errorf("cpu: %+v", c)
	}
}

// A/A: the same values under two labels are not significant, ratio 1, the interval containing 1.
func TestCompareSame(t *testing.T) {
	v := []float64{9, 12, 10, 11, 13}
	ts := append(trialsWith(lane(Host, 1), v...), trialsWith(lane(Host, 2), v...)...)
	rs := Compare(ts, "host")
	if len(rs) != 2 || rs[0].Path != "host#2" || rs[0].Significant || rs[0].Ratio != 1 || rs[0].Lo > 1 || rs[0].Hi < 1 {
		t.Errorf("%+v", rs)
	}
}

// With --mtu, each MTU's vxlan lane is compared with the host and with the routed lane of the same MTU
// only: the tunnel's cost at 9000 against routing at 9000, not at 1500.
func TestCompareMTU(t *testing.T) {
	at := func(p Path, mtu int) Lane { l := lane(p, 1); l.MTU = mtu; return l }
	ts := trialsWith(lane(Host, 1), 20, 21, 22)
	ts = append(ts, trialsWith(at(PodCrossNode, 1500), 10, 11, 12)...)
	ts = append(ts, trialsWith(at(PodCrossNode, 9000), 16, 17, 18)...)
	ts = append(ts, trialsWith(at(VXLAN, 1500), 5, 5.5, 6)...)
	ts = append(ts, trialsWith(at(VXLAN, 9000), 12, 12.75, 13.5)...)
	got := map[string]float64{}
	for _, r := range Compare(ts, "host") {
		if r.Metric == "gbps" {
			got[r.Path+" ÷ "+r.Against] = r.Ratio
			if want := map[string]int{"pod-cross-node@mtu1500": 1500, "pod-cross-node@mtu9000": 9000, "vxlan@mtu1500": 1500, "vxlan@mtu9000": 9000}[r.Path]; r.MTU != want {
				t.Errorf("%s: MTU %d, want %d", r.Path, r.MTU, want)
			}
		}
	}
	want := map[string]float64{
		"pod-cross-node@mtu1500 ÷ host": 11.0 / 21, "pod-cross-node@mtu9000 ÷ host": 17.0 / 21, "vxlan@mtu1500 ÷ host": 5.5 / 21,
		"vxlan@mtu9000 ÷ host": 12.75 / 21, "vxlan@mtu1500 ÷ pod-cross-node@mtu1500": 0.5, "vxlan@mtu9000 ÷ pod-cross-node@mtu9000": 0.75,
	}
	if len(got) != len(want) {
		t.Errorf("comparisons %v, want %v", got, want)
	}
	for k, w := range want {
		if g, ok := got[k]; !ok || math.Abs(g-w) > 0.02 {
			t.Errorf("%s: %v, want about %v", k, g, w)
		}
	}
}

// With host-cross-node measured, the pod network's cross-node paths are set against it (the same
// underlay: only the pod network's part differs), vxlan also against pod-cross-node, and the same-node
// paths and host-cross-node itself against the loopback host; without it, against host as before.
func TestCompareCrossNodeBaseline(t *testing.T) {
	against := func(rs []Ratio) map[string][]string {
		m := map[string][]string{}
		for _, r := range rs {
			if r.Metric == "gbps" {
				m[r.Path] = append(m[r.Path], r.Against)
			}
		}
		return m
	}
	ts := trialsWith(lane(Host, 1), 40, 41, 42)
	ts = append(ts, trialsWith(lane(PodSameNode, 1), 20, 21, 22)...)
	ts = append(ts, trialsWith(lane(PodCrossNode, 1), 10, 11, 12)...)
	ts = append(ts, trialsWith(lane(VXLAN, 1), 5, 6, 7)...)
	without := against(Compare(ts, "host"))
	ts = append(ts, trialsWith(lane(HostCrossNode, 1), 12, 13, 14)...)
	with := against(Compare(ts, "host"))
	want := map[string][]string{"pod-same-node": {"host"}, "pod-cross-node": {"host-cross-node"}, "vxlan": {"host-cross-node", "pod-cross-node"},
		"host-cross-node": {"host"}}
	for p, w := range want {
		if !slices.Equal(with[p], w) {
			t.Errorf("with host-cross-node: %s against %v, want %v", p, with[p], w)
		}
	}
	if !slices.Equal(without["pod-cross-node"], []string{"host"}) || !slices.Equal(without["vxlan"], []string{"host", "pod-cross-node"}) {
		t.Errorf("without host-cross-node: %v", without)
	}
	// With --mtu, each MTU's lanes are set against host networking across nodes at the same MTU.
	var mtu []Trial
	for _, m := range []int{1500, 9000} {
		for _, p := range []Path{Host, HostCrossNode, PodCrossNode, VXLAN} {
			l := lane(p, 1)
			if p != Host {
				l.MTU = m
			}
			mtu = append(mtu, trialsWith(l, 10, 11, 12)...)
		}
	}
	wantMTU := map[string][]string{"host-cross-node@mtu9000": {"host"}, "pod-cross-node@mtu9000": {"host-cross-node@mtu9000"},
		"vxlan@mtu1500": {"host-cross-node@mtu1500", "pod-cross-node@mtu1500"}}
	gotMTU := against(Compare(mtu, "host"))
	for p, w := range wantMTU {
		if !slices.Equal(gotMTU[p], w) {
			t.Errorf("with --mtu: %s against %v, want %v", p, gotMTU[p], w)
		}
	}
	// A failed host-cross-node is no baseline.
	failed := append(trialsWith(lane(Host, 1), 40, 41, 42), trialsWith(lane(PodCrossNode, 1), 10, 11, 12)...)
	failed = append(failed, Trial{Slot: Slot{Lane: lane(HostCrossNode, 1)}, Error: "refused"})
	if got := against(Compare(failed, "host")); !slices.Equal(got["pod-cross-node"], []string{"host"}) {
		t.Errorf("with host-cross-node failed: %v", got)
	}
}
