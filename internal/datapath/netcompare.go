package datapath

import (
	"math"
	"slices"

	"github.com/tare-dev/tare/internal/stats"
)

// Metric is one figure a trial yields, and which way is better.
type Metric struct {
	Name         string
	Unit         string
	HigherBetter bool
	value        func(Trial) float64
}

// metricsOf lists the figures a mode compares: throughput or latency and rate, and CPU per unit of work.
func metricsOf(m Mode) []Metric {
	cpu := Metric{Name: "cpu_per_unit", Unit: "CPU-s/" + m.Unit(), value: func(t Trial) float64 { return t.CPUPerUnit }}
	gbps := Metric{Name: "gbps", Unit: "Gbit/s", HigherBetter: true, value: func(t Trial) float64 { return t.Gbps }}
	if m.Stream() {
		return []Metric{gbps, cpu}
	}
	var out []Metric
	if m.Storage() {
		out = append(out, gbps)
	}
	return append(out, []Metric{
		{Name: "transactions_per_s", Unit: "1/s", HigherBetter: true, value: func(t Trial) float64 { return t.TPS }},
		{Name: "p50_us", Unit: "µs", value: func(t Trial) float64 { return t.P50us }},
		{Name: "p99_us", Unit: "µs", value: func(t Trial) float64 { return t.P99us }},
		cpu,
	}...)
}

// Ratio compares one metric of one lane with the same metric of another path (same mode and size): the
// baseline, or for vxlan also pod-cross-node, so the tunnel's own cost shows apart from the routing's.
type Ratio struct {
	Path    string `json:"path"`    // the lane's label (host#2 for a second copy)
	Against string `json:"against"` // the path it is compared with
	Mode    Mode   `json:"mode"`
	Size    int    `json:"size"`
	MTU     int    `json:"mtu,omitempty"` // the pod MTU the lane ran with (--mtu)
	Metric  string `json:"metric"`
	Unit    string `json:"unit"` // of median and baseline_median
	Shift
}

// Shift compares one figure's trials with the baseline's: their medians and the ratio between them. Its
// fields appear inline in a Ratio's JSON.
type Shift struct {
	N      int     `json:"n"`
	NBase  int     `json:"n_baseline"`
	Median float64 `json:"median"`
	Base   float64 `json:"baseline_median"`
	// Ratio is the Hodges–Lehmann estimate of lane ÷ baseline (the median of all pairwise ratios), with its
	// distribution-free interval at Level, from the Mann–Whitney test on the logarithms.
	Ratio       float64 `json:"ratio"`
	Lo          float64 `json:"ratio_low"`
	Hi          float64 `json:"ratio_high"`
	Level       float64 `json:"ci_level"`
	P           float64 `json:"p_value"`
	Significant bool    `json:"significant"` // P < Alpha, this comparison alone: no correction for the run's many
	MinP        float64 `json:"min_p"`       // the smallest p these trial counts can give
}

// Alpha is the significance level of the comparisons.
const Alpha = 0.05

// Compare sets every lane other than the baseline against the baseline lane of the same mode and size, on
// each of the mode's metrics, and vxlan against pod-cross-node too. The pod network's cross-node paths are
// set against host-cross-node instead of the baseline when the run measured it (baselineOf). Failed
// trials and non-positive values are left out.
func Compare(trials []Trial, baseline string) []Ratio {
	baseOf := baselines(trials, baseline)
	type key struct {
		label string
		mode  Mode
		size  int
	}
	by := map[key][]Trial{}
	var order []key
	for _, t := range trials {
		if t.Error != "" {
			continue
		}
		k := key{t.Lane.Label(), t.Lane.Mode, t.Lane.Size}
		if _, ok := by[k]; !ok {
			order = append(order, k)
		}
		by[k] = append(by[k], t)
	}
	var out []Ratio
	for _, k := range order {
		l := by[k][0].Lane
		against := []string{baseOf(l)}
		if l.Path == VXLAN && l.Copy <= 1 {
			against = append(against, Lane{Path: PodCrossNode, MTU: l.MTU}.Label())
		}
		for _, b := range against {
			if base, ok := by[key{b, k.mode, k.size}]; ok && k.label != b {
				rs := ratios(k.label, b, k.mode, k.size, base, by[k])
				for i := range rs {
					rs[i].MTU = l.MTU
				}
				out = append(out, rs...)
			}
		}
	}
	return out
}

// baselines says, for a run whose trials are trials, which lane each lane is set against (baselineLabel,
// with baseline naming the machine's loopback lane): the one rule Compare and the report's Baselines share.
func baselines(trials []Trial, baseline string) func(Lane) string {
	cross := slices.ContainsFunc(trials, func(t Trial) bool { return t.Error == "" && t.Lane.Path == HostCrossNode && t.Lane.Copy <= 1 })
	return func(l Lane) string {
		if baselineOf(l.Path, cross) == Host {
			return baseline
		}
		return baselineLabel(l, cross)
	}
}

// ratios compares lane trials ts with base on each metric of the mode.
func ratios(label, against string, mode Mode, size int, base, ts []Trial) []Ratio {
	var out []Ratio
	for _, m := range metricsOf(mode) {
		if s, ok := ShiftOf(values(base, m), values(ts, m)); ok {
			out = append(out, Ratio{Path: label, Against: against, Mode: mode, Size: size, Metric: m.Name, Unit: m.Unit, Shift: s})
		}
	}
	return out
}

// ShiftOf compares values vs with the baseline's, base, on their logarithms: the Hodges–Lehmann ratio
// vs ÷ base with its interval and the Mann–Whitney p at Alpha. Values that are not positive and finite
// are left out; false when either side has none left.
func ShiftOf(base, vs []float64) (Shift, bool) {
	a, b := logs(base), logs(vs)
	if len(a) == 0 || len(b) == 0 {
		return Shift{}, false
	}
	s := stats.MannWhitney(a, b, Alpha)
	return Shift{N: len(b), NBase: len(a), Median: math.Exp(stats.MedianOf(b)), Base: math.Exp(stats.MedianOf(a)),
		Ratio: math.Exp(s.Estimate), Lo: math.Exp(s.Lo), Hi: math.Exp(s.Hi), Level: s.Level, P: s.P, Significant: s.Significant, MinP: s.MinP}, true
}

// logs are the positive values' logarithms: ratios become shifts, which the rank test handles.
func logs(vs []float64) []float64 {
	var out []float64
	for _, v := range vs {
		if v > 0 && !math.IsInf(v, 0) && !math.IsNaN(v) {
			out = append(out, math.Log(v))
		}
	}
	return out
}
