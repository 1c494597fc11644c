package netpath

import (
	"slices"

	"github.com/tare-dev/tare/internal/datapath"
)

// Metric is one figure a net trial yields.
type Metric = datapath.Figure[Trial]

// metricsOf lists the figures a mode compares: throughput or latency and rate, and CPU per unit of work;
// each titled as the table heads its column.
func metricsOf(m Mode) []Metric {
	cpu := Metric{Name: "cpu_per_unit", Title: "CPU-s/" + m.Unit(), Unit: "CPU-s/" + m.Unit(), Value: func(t Trial) float64 { return t.CPUPerUnit }}
	gbps := Metric{Name: "gbps", Title: "GBIT/S", Unit: "Gbit/s", HigherBetter: true, Value: func(t Trial) float64 { return t.Gbps }}
	if m.Stream() {
		return []Metric{gbps, cpu}
	}
	var out []Metric
	if m.Storage() {
		out = append(out, gbps)
	}
	return append(out, []Metric{
		{Name: "transactions_per_s", Title: rateTitle(m), Unit: "1/s", HigherBetter: true, Value: func(t Trial) float64 { return t.TPS }},
		{Name: "p50_us", Title: "P50 µs", Unit: "µs", Value: func(t Trial) float64 { return t.P50us }},
		{Name: "p99_us", Title: "P99 µs", Unit: "µs", Value: func(t Trial) float64 { return t.P99us }},
		cpu,
	}...)
}

// rateTitle heads the column of a transactions mode's rate: connections, storage operations or round
// trips per second.
func rateTitle(m Mode) string {
	switch {
	case m == TCPCRR:
		return "CONN/S"
	case m.Storage():
		return "OPS/S"
	}
	return "RT/S"
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
	datapath.Shift
}

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
	order, by := datapath.LaneTrials(trials, func(t Trial) (key, bool) { return key{t.Lane.Label(), t.Lane.Mode, t.Lane.Size}, t.Error == "" })
	var out []Ratio
	for _, k := range order {
		l := by[k][0].Lane
		against := []string{baseOf(l)}
		if l.Path == VXLAN && l.Copy <= 1 {
			against = append(against, Lane{Path: PodCrossNode, MTU: l.MTU}.Label())
		}
		for _, b := range against {
			base, ok := by[key{b, k.mode, k.size}]
			if !ok || k.label == b {
				continue
			}
			for m, s := range datapath.Shifts(metricsOf(k.mode), base, by[k]) {
				out = append(out, Ratio{Path: k.label, Against: b, Mode: k.mode, Size: k.size, MTU: l.MTU, Metric: m.Name, Unit: m.Unit, Shift: s})
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
