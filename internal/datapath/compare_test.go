package datapath

import (
	"math"
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
