package diskpath

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tare-dev/tare/internal/datapath"
	"github.com/tare-dev/tare/internal/htmlreport"
)

// TestViewDisk: a disk run's view has one group per pattern, block size and depth, in one chart per figure
// (no Chart, no swept value), hostpath at half the host's IOPS carrying that ratio, and the targets.
func TestViewDisk(t *testing.T) {
	targets, err := ParseTargets("host,hostpath")
	if err != nil {
		t.Fatal(err)
	}
	lanes := Plan(targets, []RW{RandRead}, []int{4096}, []int{1})
	var trials []Trial
	for i, iops := range []float64{1000, 1100, 1200, 500, 550, 600} {
		l := lanes[i/3]
		trials = append(trials, Trial{Seq: i + 1, Slot: Slot{Round: i%3 + 1, Lane: l}, FioOutcome: FioOutcome{IOPS: iops, MBps: iops * 4096 / 1e6, P50us: 1e6 / iops, P99us: 2e6 / iops},
			CPUPer10k: 1, Usage: datapath.Usage{NodeBusy: 300}})
	}
	r := Report{Node: "vm", Baseline: "host", Lanes: lanes, Size: 16 << 20, Trials: trials, Ratios: Compare(trials, "host"),
		Targets: []TargetInfo{{Target: "host", File: "/d/host.fio", FSType: "ext4", Device: "254:0", SameDevice: true, Direct: true}}}
	v := r.Result().View()
	if len(v.Groups) != 1 || v.Groups[0].Name != "randread 4k qd1" || v.Groups[0].Chart != "" || v.Sweep != "" {
		t.Fatalf("groups %+v, sweep %q", v.Groups, v.Sweep)
	}
	hp := v.Groups[0].Lanes[1]
	var iops htmlreport.DatapathRatio
	for _, q := range hp.Ratios {
		if q.Figure == "iops" {
			iops = q
		}
	}
	if hp.Label != "hostpath" || !cmp.Equal(hp.Values[0], []float64{500, 550, 600}) || math.Abs(iops.Ratio-0.5) > 1e-12 || iops.N != 3 || iops.NBase != 3 {
		t.Errorf("hostpath lane %+v", hp)
	}
	want := []htmlreport.DatapathTarget{{Target: "host", File: "/d/host.fio", FSType: "ext4", Device: "254:0", SameDevice: true, IO: "direct"}}
	if diff := cmp.Diff(want, v.Targets); diff != "" {
		t.Errorf("targets (-want +got):\n%s", diff)
	}
	if tr := v.Trials[3]; tr.Lane != "hostpath" || tr.Values[0] != 500 || tr.NodeBusy != 300 {
		t.Errorf("trial 4: %+v", tr)
	}
}
