package datapath

import (
	"cmp"
	"slices"
)

// DiskRatio compares one figure of one target with the host's, for the same pattern, block size and
// queue depth.
type DiskRatio struct {
	Target  string `json:"target"`  // the lane's label (host#2 for a second copy)
	Against string `json:"against"` // the target it is compared with
	RW      RW     `json:"rw"`
	BS      int    `json:"bs"`
	IODepth int    `json:"iodepth"`
	Metric  string `json:"metric"`
	Unit    string `json:"unit"` // of median and baseline_median
	Shift
}

// diskMetric is one figure a disk trial yields.
type diskMetric struct {
	Name, Title, Unit string
	value             func(DiskTrial) float64
}

// diskMetrics are the figures compared, the main one (IOPS) first.
var diskMetrics = []diskMetric{
	{"iops", "IOPS", "1/s", func(t DiskTrial) float64 { return t.IOPS }},
	{"mb_per_s", "MB/s", "MB/s", func(t DiskTrial) float64 { return t.MBps }},
	{"clat_p50_us", "P50 µs", "µs", func(t DiskTrial) float64 { return t.P50us }},
	{"clat_p99_us", "P99 µs", "µs", func(t DiskTrial) float64 { return t.P99us }},
	{"cpu_per_10k_io", "CPU-s/10k IO", "CPU-s/10k I/Os", func(t DiskTrial) float64 { return t.CPUPer10k }},
}

// CompareDisk sets every lane other than the baseline's against the baseline lane of the same pattern,
// block size and depth, on each figure (ShiftOf). Failed trials and non-positive values are left out.
func CompareDisk(trials []DiskTrial, baseline string) []DiskRatio {
	by := map[DiskLane][]DiskTrial{}
	var order []DiskLane
	for _, t := range trials {
		if t.Error != "" {
			continue
		}
		if _, ok := by[t.Lane]; !ok {
			order = append(order, t.Lane)
		}
		by[t.Lane] = append(by[t.Lane], t)
	}
	// In the tables' order: by pattern, block size and depth, then target.
	slices.SortFunc(order, func(a, b DiskLane) int {
		return cmp.Or(cmp.Compare(slices.Index(RWs, a.RW), slices.Index(RWs, b.RW)), cmp.Compare(a.BS, b.BS), cmp.Compare(a.IODepth, b.IODepth),
			cmp.Compare(slices.Index(Targets, a.Target), slices.Index(Targets, b.Target)), cmp.Compare(a.Copy, b.Copy))
	})
	var out []DiskRatio
	for _, l := range order {
		base := l
		base.Target, base.Copy = Target(baseline), 1
		bts, ok := by[base]
		if !ok || l == base {
			continue
		}
		for _, m := range diskMetrics {
			if s, ok := ShiftOf(diskValues(bts, m), diskValues(by[l], m)); ok {
				out = append(out, DiskRatio{Target: l.Label(), Against: baseline, RW: l.RW, BS: l.BS, IODepth: l.IODepth, Metric: m.Name, Unit: m.Unit, Shift: s})
			}
		}
	}
	return out
}

func diskValues(ts []DiskTrial, m diskMetric) []float64 {
	out := make([]float64, 0, len(ts))
	for _, t := range ts {
		out = append(out, m.value(t))
	}
	return out
}
