package agent

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tare-dev/tare/internal/bpfstats"
)

// descSelfBPF is tare's in-kernel cost: the run time of its BPF programs (bpfstats). The programs with
// in_self_cpu="false" run in other tasks (exec'ing processes, I/O submitters and completers) and are not in
// tare_self_cpu_seconds_total; the kernel charges them to those tasks, and they stay in those groups' CPU.
// The task pass (in_self_cpu="true") runs in tare's own read(2) and is already in
// tare_self_cpu_seconds_total.
var descSelfBPF = prometheus.NewDesc("tare_self_bpf_seconds_total",
	"Run time of tare's BPF programs in the kernel, by program; in_self_cpu=\"true\" is already in tare_self_cpu_seconds_total, \"false\" is on top of it.",
	[]string{"program", "in_self_cpu"}, nil)

// bpfState sums the deltas of the programs' counters from one sample to the next.
type bpfState struct {
	last    []bpfstats.Stat
	seconds map[string]float64
	inSelf  map[string]bool
}

// add takes a sample's cumulative counters; the baseline's only set the starting point.
func (b *bpfState) add(stats []bpfstats.Stat, baseline bool) {
	if !baseline {
		if b.seconds == nil {
			b.seconds, b.inSelf = map[string]float64{}, map[string]bool{}
		}
		for _, d := range bpfstats.Delta(b.last, stats) {
			b.seconds[d.Name] += d.RunTime.Seconds()
			b.inSelf[d.Name] = d.InSelf
		}
	}
	b.last = stats
}

func (b *bpfState) collect(ch chan<- prometheus.Metric) {
	for name, v := range b.seconds {
		emit(ch, descSelfBPF, prometheus.CounterValue, v, name, strconv.FormatBool(b.inSelf[name]))
	}
}
