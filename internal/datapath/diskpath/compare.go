package diskpath

import (
	"cmp"
	"slices"

	"github.com/tare-dev/tare/internal/datapath"
)

// Ratio compares one figure of one target with the host's, for the same pattern, block size and
// queue depth.
type Ratio struct {
	Target  string `json:"target"`  // the lane's label (host#2 for a second copy)
	Against string `json:"against"` // the target it is compared with
	RW      RW     `json:"rw"`
	BS      int    `json:"bs"`
	IODepth int    `json:"iodepth"`
	Metric  string `json:"metric"`
	Unit    string `json:"unit"` // of median and baseline_median
	datapath.Shift
}

// metric is one figure a disk trial yields.
type metric = datapath.Figure[Trial]

// metrics are the figures compared, the main one (IOPS) first.
var metrics = []metric{
	{Name: "iops", Title: "IOPS", Unit: "1/s", HigherBetter: true, Value: func(t Trial) float64 { return t.IOPS }},
	{Name: "mb_per_s", Title: "MB/s", Unit: "MB/s", HigherBetter: true, Value: func(t Trial) float64 { return t.MBps }},
	{Name: "clat_p50_us", Title: "P50 µs", Unit: "µs", Value: func(t Trial) float64 { return t.P50us }},
	{Name: "clat_p99_us", Title: "P99 µs", Unit: "µs", Value: func(t Trial) float64 { return t.P99us }},
	{Name: "cpu_per_10k_io", Title: "CPU-s/10k IO", Unit: "CPU-s/10k I/Os", Value: func(t Trial) float64 { return t.CPUPer10k }},
}

// Compare sets every lane other than the baseline's against the baseline lane of the same pattern,
// block size and depth, on each figure (ShiftOf). Failed trials and non-positive values are left out.
func Compare(trials []Trial, baseline string) []Ratio {
	order, by := datapath.LaneTrials(trials, func(t Trial) (Lane, bool) { return t.Lane, t.Error == "" })
	// In the tables' order: by pattern, block size and depth, then target.
	slices.SortFunc(order, func(a, b Lane) int {
		return cmp.Or(cmp.Compare(slices.Index(RWs, a.RW), slices.Index(RWs, b.RW)), cmp.Compare(a.BS, b.BS), cmp.Compare(a.IODepth, b.IODepth),
			cmp.Compare(slices.Index(Targets, a.Target), slices.Index(Targets, b.Target)), cmp.Compare(a.Copy, b.Copy))
	})
	var out []Ratio
	for _, l := range order {
		base := l
		base.Target, base.Copy = Target(baseline), 1
		bts, ok := by[base]
		if !ok || l == base {
			continue
		}
		for m, s := range datapath.Shifts(metrics, bts, by[l]) {
			out = append(out, Ratio{Target: l.Label(), Against: baseline, RW: l.RW, BS: l.BS, IODepth: l.IODepth, Metric: m.Name, Unit: m.Unit, Shift: s})
		}
	}
	return out
}
