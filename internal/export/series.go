package export

import (
	"sort"
	"time"

	"github.com/tare-dev/tare/internal/record"
	"github.com/tare-dev/tare/internal/sample"
	"github.com/tare-dev/tare/internal/summary"
)

// Series is one metric with its labels and its points, in time order.
type Series struct {
	Metric string            `json:"metric"`
	Help   string            `json:"help"`
	Unit   string            `json:"unit"`
	Labels map[string]string `json:"labels"`
	Points []Point           `json:"points"`
}

// Point is a value at the end of an interval (or at a detail sample, for memory).
type Point struct {
	Time  time.Time `json:"time"`
	Value float64   `json:"value"`
}

// metric names and their help, in the order they are written.
var metrics = []struct{ name, unit, help string }{
	{"tare_node_cpu_millicores", "millicores", "Node CPU over each interval by mode, from /proc/stat (busy = user+nice+system+irq+softirq+steal)."},
	{"tare_node_busy_millicores", "millicores", "Node busy over each interval as tare's reports count it, from the counter in the reference label: the scheduler's task time (cgroup-v1-cpuacct, cgroup-v2-tasks; exact nanoseconds, plus irq time when the kernel accounts it apart), else /proc/stat busy (proc-stat)."},
	{"tare_node_load1", "", "One-minute load average at each sample."},
	{"tare_group_cpu_millicores", "millicores", "CPU of each group over each interval, short-lived children included in their parent's group; group_kind says what the group is (component, pod, kernel, self, other)."},
	{"tare_group_memory_bytes", "bytes", "Memory of each group's processes at each detail sample, by the memory label (rss, pss, private); group and group_kind as in tare_group_cpu_millicores."},
}

// Build turns a recording into series. Series with no points are left out.
func Build(rec record.Recording) []Series {
	ss := rec.Samples
	if len(ss) < 2 {
		return nil
	}
	host := rec.Meta.Host
	var out []Series
	modes := []string{"user", "nice", "system", "irq", "softirq", "steal", "iowait", "idle"}
	byMode := make([]Series, len(modes))
	for i, m := range modes {
		byMode[i] = Series{Metric: metrics[0].name, Labels: map[string]string{labelHost: host, labelMode: m}}
	}
	meter := sample.NewBusyMeter(rec.Meta, ss)
	busy := Series{Metric: metrics[1].name, Labels: map[string]string{labelHost: host, labelReference: string(meter.Ref)}}
	series, _ := meter.Series(ss)
	load := Series{Metric: metrics[2].name, Labels: map[string]string{labelHost: host}}
	for i := 1; i < len(ss); i++ {
		el := ss[i].Elapsed.Seconds()
		if el <= 0 {
			continue
		}
		d := ss[i].Node.CPU.Sub(ss[i-1].Node.CPU)
		vals := []float64{d.User, d.Nice, d.System, d.IRQ, d.SoftIRQ, d.Steal, d.Iowait, d.Idle}
		for m, v := range vals {
			byMode[m].Points = append(byMode[m].Points, Point{ss[i].Time, v / el * 1000})
		}
		busy.Points = append(busy.Points, Point{ss[i].Time, series[i-1]})
		load.Points = append(load.Points, Point{ss[i].Time, ss[i].Node.Load1})
	}
	out = append(out, byMode...)
	out = append(out, busy, load)
	kinds := groupKinds(rec)
	out = append(out, groupCPU(rec, summary.Build(rec.Meta, rec.Samples, summary.Options{}), host, kinds)...)
	out = append(out, groupMemory(rec, host, kinds)...)
	var kept []Series
	for i := range out {
		if len(out[i].Points) > 0 {
			for _, m := range metrics {
				if m.name == out[i].Metric {
					out[i].Help, out[i].Unit = m.help, m.unit
				}
			}
			kept = append(kept, out[i])
		}
	}
	return kept
}

// Label names. Each means one thing on every metric, so series join on them in PromQL: a group's CPU and
// memory share group and group_kind.
const (
	labelHost      = "host"
	labelMode      = "mode"      // a /proc/stat CPU mode
	labelReference = "reference" // the counter node busy is read from
	labelGroup     = "group"
	labelGroupKind = "group_kind" // component, pod, kernel, self, other
	labelMemory    = "memory"     // rss, pss, private
)

func groupCPU(rec record.Recording, sum summary.Summary, host string, kinds map[string]string) []Series {
	series := sum.GroupSeries()
	names := make([]string, 0, len(series))
	for g := range series {
		names = append(names, g)
	}
	sort.Strings(names)
	var out []Series
	for _, g := range names {
		s := Series{Metric: metrics[3].name, Labels: map[string]string{labelHost: host, labelGroup: g, labelGroupKind: kinds[g]}}
		for i, v := range series[g] {
			s.Points = append(s.Points, Point{rec.Samples[i+1].Time, v})
		}
		out = append(out, s)
	}
	return out
}

// groupKinds maps each group to its kind, as the processes in it were classified (tare's own group, which
// the summary keeps apart from the others, included).
func groupKinds(rec record.Recording) map[string]string {
	kinds := map[string]string{}
	for _, smp := range rec.Samples {
		for _, p := range smp.New {
			if _, ok := kinds[p.Group]; !ok {
				kinds[p.Group] = p.GroupKind
			}
		}
	}
	return kinds
}

// groupMemory sums each group's live processes' memory at the samples that read it.
func groupMemory(rec record.Recording, host string, kinds map[string]string) []Series {
	group := map[int64]string{}
	type key struct{ group, memory string }
	acc := map[key]*Series{}
	var order []key
	for _, smp := range rec.Samples {
		for _, p := range smp.New {
			group[p.ID] = p.Group
		}
		sums := map[key]float64{}
		detail := false
		for _, ps := range smp.Procs {
			if !ps.HasDetail {
				continue
			}
			detail = true
			g := group[ps.ID]
			sums[key{g, "rss"}] += float64(ps.RSS)
			sums[key{g, "pss"}] += float64(ps.PSS)
			sums[key{g, "private"}] += float64(ps.Private)
		}
		if !detail {
			continue
		}
		for k, v := range sums {
			s := acc[k]
			if s == nil {
				s = &Series{Metric: metrics[4].name, Labels: map[string]string{labelHost: host, labelGroup: k.group, labelGroupKind: kinds[k.group], labelMemory: k.memory}}
				acc[k] = s
				order = append(order, k)
			}
			s.Points = append(s.Points, Point{smp.Time, v})
		}
	}
	sort.Slice(order, func(i, j int) bool {
		if order[i].group != order[j].group {
			return order[i].group < order[j].group
		}
		return order[i].memory < order[j].memory
	})
	var out []Series
	for _, k := range order {
		out = append(out, *acc[k])
	}
	return out
}
