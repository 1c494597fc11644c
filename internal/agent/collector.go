package agent

import (
	"sort"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tare-dev/tare/internal/blockio"
)

// The metrics of the contract (docs/guides/deploy-the-agent.md, "tare agent"). Names, types and labels are relied on by the
// shipped Prometheus rules and by tare report --prometheus: change them only with those.
var (
	groupLabels = []string{"group", "group_kind", "namespace", "pod"}

	descInfo = prometheus.NewDesc("tare_agent_info", "The agent's node, version, node busy reference, per-process CPU source and kernel (always 1).",
		[]string{"node", "version", "reference", "cpu_source", "kernel"}, nil)
	descCPUs     = prometheus.NewDesc("tare_node_cpus", "Online CPUs.", nil, nil)
	descBusy     = prometheus.NewDesc("tare_node_busy_cpu_seconds_total", "Node busy CPU seconds as tare's reports count it, by the counter read (reference).", []string{"reference"}, nil)
	descNodeCPU  = prometheus.NewDesc("tare_node_cpu_seconds_total", "CPU seconds by /proc/stat mode since the agent started.", []string{"mode"}, nil)
	descGroupCPU = prometheus.NewDesc("tare_group_cpu_seconds_total", "CPU seconds credited to the group (component, pod container, kernel, self, other).",
		[]string{"group", "group_kind", "namespace", "pod", "container"}, nil)
	descChildCPU  = prometheus.NewDesc("tare_group_children_cpu_seconds_total", "CPU seconds of short-lived children credited to the group of their long-lived ancestor.", groupLabels, nil)
	descChildRuns = prometheus.NewDesc("tare_group_children_runs_total", "Short-lived children of the group that ended.", groupLabels, nil)
	descGroupMem  = prometheus.NewDesc("tare_group_memory_bytes", "Memory of the group's live processes at their last detail reading (rss, pss, private).",
		append(append([]string{}, groupLabels...), "memory"), nil)
	descRead     = prometheus.NewDesc("tare_group_disk_read_bytes_total", "Bytes the group's processes read from storage.", groupLabels, nil)
	descWritten  = prometheus.NewDesc("tare_group_disk_written_bytes_total", "Bytes the group's processes wrote to storage.", groupLabels, nil)
	descThreads  = prometheus.NewDesc("tare_group_threads", "Threads of the group's live processes at their last detail reading.", groupLabels, nil)
	descGap      = prometheus.NewDesc("tare_unattributed_cpu_cores", "Node busy minus groups minus tare over the last interval, in cores (can be negative).", nil, nil)
	descRes      = prometheus.NewDesc("tare_reconciliation_resolution_cores", "How far tare_unattributed_cpu_cores can be from zero from counter resolution alone, in cores.", nil, nil)
	descProcCPU  = prometheus.NewDesc("tare_process_cpu_seconds_total", "CPU seconds of one of the top processes by CPU over the agent's window.", []string{"pid", "comm", "group", "group_kind"}, nil)
	descProcMem  = prometheus.NewDesc("tare_process_memory_bytes", "Memory of one of the top processes at its last detail reading.", []string{"pid", "comm", "group", "memory"}, nil)
	descSelf     = prometheus.NewDesc("tare_self_cpu_seconds_total", "CPU seconds of tare itself.", nil, nil)
	descSamples  = prometheus.NewDesc("tare_samples_total", "Samples taken.", nil, nil)
	descTook     = prometheus.NewDesc("tare_sample_duration_seconds", "How long the last sample took to read.", nil, nil)
	descRing     = prometheus.NewDesc("tare_ring_samples", "Samples held in the ring (at most --window / --interval + 1).", nil, nil)
	descLast     = prometheus.NewDesc("tare_last_sample_timestamp_seconds", "Unix time of the sample every counter is from: rates between two scrapes are over the time between their samples.", nil, nil)
	descWarnings = prometheus.NewDesc("tare_warnings_total", "Sampler warnings by kind (source, skipped, limitation).", []string{"kind"}, nil)
	ioLabels     = append(append([]string{}, groupLabels...), "direction")
	descIOReqs   = prometheus.NewDesc("tare_group_block_io_requests_total", "Block I/O requests completed for the group's processes (the kernel's block tracepoints), by direction (read, write, other).", ioLabels, nil)
	descIOBytes  = prometheus.NewDesc("tare_group_block_io_bytes_total", "Bytes of the group's completed block I/O requests, by direction.", ioLabels, nil)
	descIODevice = prometheus.NewDesc("tare_group_block_io_device_seconds", "Device time (issue to completion) of the group's block I/O requests. The kernel counts log2 buckets of microseconds only: the bucket bounds are exact, _sum is estimated at each bucket's midpoint.", groupLabels, nil)
	descIOLost   = prometheus.NewDesc("tare_block_io_uncounted_requests_total", "Block I/O requests in no group: completions of requests the tracer did not see made (unmatched) or had no room to count (dropped).", []string{"reason"}, nil)
	allDescs     = []*prometheus.Desc{descInfo, descCPUs, descBusy, descNodeCPU, descGroupCPU, descChildCPU, descChildRuns, descGroupMem,
		descRead, descWritten, descThreads, descGap, descRes, descProcCPU, descProcMem, descSelf, descSamples, descTook, descRing, descLast, descWarnings,
		descIOReqs, descIOBytes, descIODevice, descIOLost, descSelfBPF}
)

// collector exports the state as const metrics, read under the state's lock so that one scrape sees one
// sample.
type collector struct {
	s       *state
	node    string
	version string
	top     int
}

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range allDescs {
		ch <- d
	}
}

// emit sends one metric, or an invalid one naming what was wrong (a metric never panics a scrape).
func emit(ch chan<- prometheus.Metric, d *prometheus.Desc, t prometheus.ValueType, v float64, labels ...string) {
	m, err := prometheus.NewConstMetric(d, t, v, labels...)
	if err != nil {
		m = prometheus.NewInvalidMetric(d, err)
	}
	ch <- m
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	s := c.s
	s.mu.RLock()
	defer s.mu.RUnlock()
	for kind, n := range s.warnings {
		emit(ch, descWarnings, prometheus.CounterValue, float64(n), kind)
	}
	if s.samples == 0 {
		return
	}
	m := s.meta
	emit(ch, descInfo, prometheus.GaugeValue, 1, c.node, c.version, string(m.NodeReference), m.CPUSource, m.Kernel)
	emit(ch, descCPUs, prometheus.GaugeValue, float64(m.CPUs))
	for ref, v := range s.busy {
		emit(ch, descBusy, prometheus.CounterValue, v, string(ref))
	}
	cpu := s.nodeCPU
	for _, mode := range []struct {
		name string
		v    float64
	}{{"user", cpu.User}, {"nice", cpu.Nice}, {"system", cpu.System}, {"idle", cpu.Idle}, {"iowait", cpu.Iowait},
		{"irq", cpu.IRQ}, {"softirq", cpu.SoftIRQ}, {"steal", cpu.Steal}} {
		emit(ch, descNodeCPU, prometheus.CounterValue, max(mode.v, 0), mode.name)
	}
	c.groups(ch)
	c.blockIO(ch)
	c.processes(ch)
	emit(ch, descGap, prometheus.GaugeValue, s.gap)
	emit(ch, descRes, prometheus.GaugeValue, s.res)
	emit(ch, descSelf, prometheus.CounterValue, float64(s.selfNs)/1e9)
	s.bpf.collect(ch)
	emit(ch, descSamples, prometheus.CounterValue, float64(s.samples))
	emit(ch, descTook, prometheus.GaugeValue, s.took.Seconds())
	emit(ch, descRing, prometheus.GaugeValue, float64(s.n))
	emit(ch, descLast, prometheus.GaugeValue, float64(s.prev.Time.UnixNano())/1e9)
}

// podTotals are a pod's (or other group's) figures summed over its containers and live processes.
type podTotals struct {
	childNs, runs, readB, writeB uint64
	rss, pss, private            uint64
	threads                      int
}

func (c collector) groups(ch chan<- prometheus.Metric) {
	s := c.s
	pods := map[podKey]*podTotals{}
	for k, g := range s.groups {
		emit(ch, descGroupCPU, prometheus.CounterValue, float64(g.cpuNs)/1e9, k.group, k.kind, k.ns, k.pod, k.ctr)
		t := pods[k.podOf()]
		if t == nil {
			t = &podTotals{}
			pods[k.podOf()] = t
		}
		t.childNs += g.childNs
		t.runs += g.runs
		t.readB += g.readB
		t.writeB += g.writeB
	}
	for _, p := range s.procs {
		t := pods[p.key.podOf()]
		if p.exitSeq != 0 || !p.last.HasDetail || t == nil {
			continue
		}
		t.rss += p.last.RSS
		t.pss += p.last.PSS
		t.private += p.last.Private
		t.threads += p.last.Threads
	}
	for k, t := range pods {
		l := []string{k.group, k.kind, k.ns, k.pod}
		emit(ch, descChildCPU, prometheus.CounterValue, float64(t.childNs)/1e9, l...)
		emit(ch, descChildRuns, prometheus.CounterValue, float64(t.runs), l...)
		emit(ch, descRead, prometheus.CounterValue, float64(t.readB), l...)
		emit(ch, descWritten, prometheus.CounterValue, float64(t.writeB), l...)
		emit(ch, descThreads, prometheus.GaugeValue, float64(t.threads), l...)
		emit(ch, descGroupMem, prometheus.GaugeValue, float64(t.rss), append(l, "rss")...)
		emit(ch, descGroupMem, prometheus.GaugeValue, float64(t.pss), append(l, "pss")...)
		emit(ch, descGroupMem, prometheus.GaugeValue, float64(t.private), append(l, "private")...)
	}
}

// processes exports the top N processes by CPU over the ring's window; a process that leaves the top N
// stops being exported. Two processes with the same labels (a reused PID in the same group) export the
// busier one.
func (c collector) processes(ch chan<- prometheus.Metric) {
	if c.top == 0 {
		return
	}
	var top []*proc
	for _, p := range c.s.procs {
		if p.winNs > 0 {
			top = append(top, p)
		}
	}
	sort.Slice(top, func(i, j int) bool {
		if top[i].winNs != top[j].winNs {
			return top[i].winNs > top[j].winNs
		}
		return top[i].info.ID < top[j].info.ID
	})
	type labels struct{ pid, comm, group, kind string }
	done := map[labels]bool{}
	for _, p := range top {
		if len(done) == c.top {
			break
		}
		l := labels{strconv.Itoa(p.info.Key.PID), p.info.Comm, p.key.group, p.key.kind}
		if done[l] {
			continue
		}
		done[l] = true
		emit(ch, descProcCPU, prometheus.CounterValue, float64(p.cpuNs)/1e9, l.pid, l.comm, l.group, l.kind)
		d := p.last
		for _, mem := range []struct {
			name string
			v    uint64
		}{{"rss", d.RSS}, {"pss", d.PSS}, {"private", d.Private}} {
			emit(ch, descProcMem, prometheus.GaugeValue, float64(mem.v), l.pid, l.comm, l.group, mem.name)
		}
	}
}

// blockIO exports each pod's (or other group's) block I/O, its containers summed, and the requests the
// tracer could not charge; nothing without the tracer.
func (c collector) blockIO(ch chan<- prometheus.Metric) {
	s := c.s
	if !s.io.on {
		return
	}
	emit(ch, descIOLost, prometheus.CounterValue, float64(s.io.unmatched), "unmatched")
	emit(ch, descIOLost, prometheus.CounterValue, float64(s.io.dropped), "dropped")
	pods := map[podKey]*ioCounters{}
	for k, g := range s.groups {
		if g.io == nil {
			continue
		}
		t := pods[k.podOf()]
		if t == nil {
			t = &ioCounters{}
			pods[k.podOf()] = t
		}
		for d := range t.requests {
			t.requests[d] += g.io.requests[d]
			t.bytes[d] += g.io.bytes[d]
		}
		t.device.Add(&g.io.device)
	}
	for k, t := range pods {
		l := []string{k.group, k.kind, k.ns, k.pod}
		for d := range t.requests {
			dir := blockio.Dir(d).String()
			emit(ch, descIOReqs, prometheus.CounterValue, float64(t.requests[d]), append(l, dir)...)
			emit(ch, descIOBytes, prometheus.CounterValue, float64(t.bytes[d]), append(l, dir)...)
		}
		count, sum, buckets := histogramOf(&t.device)
		m, err := prometheus.NewConstHistogram(descIODevice, count, sum, buckets, l...)
		if err != nil {
			m = prometheus.NewInvalidMetric(descIODevice, err)
		}
		ch <- m
	}
}

// histogramOf converts a log2 histogram of microseconds into Prometheus's cumulative buckets in seconds
// (upper bound of each slot but the open last one), with its count and a sum estimated at the slots'
// midpoints.
func histogramOf(h *blockio.Histogram) (count uint64, sum float64, buckets map[float64]uint64) {
	buckets = make(map[float64]uint64, blockio.Slots-1)
	for i, n := range h {
		lo, hi := blockio.SlotBounds(i)
		count += n
		if i < blockio.Slots-1 {
			buckets[hi.Seconds()] = count
			sum += float64(n) * (lo + hi).Seconds() / 2
		} else {
			sum += float64(n) * lo.Seconds()
		}
	}
	return count, sum, buckets
}
