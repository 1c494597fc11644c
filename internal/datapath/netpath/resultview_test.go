package netpath

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tare-dev/tare/internal/datapath"
	"github.com/tare-dev/tare/internal/htmlreport"
	"github.com/tare-dev/tare/internal/warning"
)

// closeFloats compares floats to 1e-12: a ratio goes through logarithms and back.
var closeFloats = cmp.Comparer(func(a, b float64) bool { return math.Abs(a-b) <= 1e-12*math.Max(1, math.Abs(a)) })

// TestViewNet: the page's view of a run puts each lane's trials under its mode and size, in the order run,
// a failed one left out of the figures but listed with its error; vxlan at half the host's throughput at
// 1k and a quarter at 16k carries those ratios, each at its own size.
func TestViewNet(t *testing.T) {
	host, vxlan := Lane{Path: Host, Copy: 1}, Lane{Path: VXLAN, Copy: 1}
	lanes := Plan([]Lane{host, vxlan}, []Mode{TCPStream}, []int{1 << 10, 16 << 10}, nil)
	var trials []Trial
	add := func(l Lane, gbps ...float64) {
		for _, g := range gbps {
			trials = append(trials, Trial{Seq: len(trials) + 1, Slot: Slot{Round: 1, Lane: l}, Outcome: Outcome{Gbps: g}, NodeBusy: 1000, CPUPerUnit: 1 / g})
		}
	}
	add(lanes[0], 10, 11, 12)
	add(lanes[1], 5, 5.5, 6)
	add(lanes[2], 20, 24)
	add(lanes[3], 5, 6)
	trials = append(trials, Trial{Seq: len(trials) + 1, Slot: Slot{Round: 2, Lane: lanes[3]}, Error: "iperf3: connection refused"})
	r := Report{Node: "vm", Baseline: string(Host), Lanes: lanes, Parallel: 1, Trials: trials, Ratios: Compare(trials, string(Host)),
		Skipped:  map[string]string{"clusterip": "not asked"},
		Warnings: []warning.Warning{{Code: datapath.WarnOtherNode, Message: "measured another machine"}}}
	v := r.Result().View()

	type lane struct {
		Label string
		Gbps  []float64
		Ratio float64 // gbps against host; 0 for none
	}
	var got [][]lane
	for _, g := range v.Groups {
		var ls []lane
		for _, l := range g.Lanes {
			x := lane{Label: l.Label, Gbps: l.Values[0]}
			for _, q := range l.Ratios {
				if q.Figure == "gbps" && q.Against == "host" {
					x.Ratio = q.Ratio
				}
			}
			ls = append(ls, x)
		}
		got = append(got, ls)
	}
	want := [][]lane{
		{{"host", []float64{10, 11, 12}, 0}, {"vxlan", []float64{5, 5.5, 6}, 0.5}},
		{{"host", []float64{20, 24}, 0}, {"vxlan", []float64{5, 6}, 0.25}},
	}
	if diff := cmp.Diff(want, got, closeFloats); diff != "" {
		t.Errorf("lanes (-want +got):\n%s", diff)
	}
	if g := v.Groups[1]; g.Name != "tcp-stream, 16k messages" || g.Chart != "tcp-stream" || g.Value != "16k" || g.Figures[0].Name != "gbps" {
		t.Errorf("second group %+v", g)
	}
	if v.Sweep == "" || v.Baseline != "host" || v.Lane != "path" {
		t.Errorf("view %+v: want a swept message size against host's paths", v)
	}
	wantTrials := []htmlreport.DatapathTrial{
		{Seq: 10, Round: 1, Lane: "vxlan", Group: 1, Values: []float64{6, 1.0 / 6}, NodeBusy: 1000},
		{Seq: 11, Round: 2, Lane: "vxlan", Group: 1, Error: "iperf3: connection refused"},
	}
	if diff := cmp.Diff(wantTrials, v.Trials[9:], closeFloats); diff != "" {
		t.Errorf("trials (-want +got):\n%s", diff)
	}
	wantNotes := []string{"Not measured: clusterip: not asked", "Failed trials (left out): #11 vxlan tcp-stream 16k: iperf3: connection refused",
		"Warning (other-node): measured another machine"}
	if diff := cmp.Diff(wantNotes, v.Notes); diff != "" {
		t.Errorf("notes (-want +got):\n%s", diff)
	}
}
