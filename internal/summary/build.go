package summary

import (
	"fmt"
	"sort"
	"time"

	"github.com/tare-dev/tare/internal/output"
	"github.com/tare-dev/tare/internal/sample"
	"github.com/tare-dev/tare/internal/stats"
)

type procAcc struct {
	info    sample.ProcInfo
	series  []float64 // own CPU, millicores per interval (nil until it uses CPU)
	total   uint64
	kids    uint64
	memN    int // readings from smaps_rollup (or statm figures that follow one): rss, pss and priv add them up
	rss     float64
	pss     float64
	priv    float64
	est     memSum // readings from statm alone (sample.ProcSample.StatmOnly): used when there is no other
	threads int
	ioFirst *ioPoint
	ioLast  *ioPoint
}

// memSum adds up memory readings of one kind.
type memSum struct {
	n              int
	rss, pss, priv float64
}

type ioPoint struct {
	at          float64 // seconds since the window opened (monotonic)
	read, write uint64
}

// Build analyses a series of samples. samples[0] is the baseline. It never fails: a series too short to
// say anything yields an empty summary with a warning.
func Build(meta sample.Meta, samples []sample.Sample, opts Options) Summary {
	s := Summary{Meta: meta, BusyDefinition: BusyDefinition, top: opts.Top,
		Groups: []Group{}, Processes: []Process{}, Children: []Children{}}
	if s.top == 0 {
		s.top = 20
	}
	if opts.Match != nil {
		s.Filter = opts.Match.String()
	}
	s.Node.EffortNote = EffortNote
	s.Node.CPUs = meta.CPUs
	if len(samples) < 2 {
		s.Warnings = append(s.Warnings, Warning{Code: WarnTooFewSamples, Figure: FigureWindow,
			Message: fmt.Sprintf("only %d sample(s): at least two are needed to measure anything; measure for longer than one interval", len(samples)),
			Cause:   "the window ended (or was interrupted) before its second sample"})
		if len(samples) == 1 {
			s.Window.Start, s.Window.End = samples[0].Time, samples[0].Time
		}
		return s
	}
	first, last := samples[0], samples[len(samples)-1]
	n := len(samples) - 1
	secs := windowSeconds(samples) // monotonic: the sum of the intervals, immune to wall-clock steps
	s.Window = Window{Start: first.Time, End: last.Time, Seconds: output.Round(secs, 3), Intervals: n}
	procs := map[int64]*procAcc{}
	s.buildNode(samples, secs)
	at := 0.0
	for i, smp := range samples {
		at += smp.Elapsed.Seconds()
		for _, info := range smp.New {
			procs[info.ID] = &procAcc{info: info}
		}
		for _, id := range smp.Exited {
			if p := procs[id]; p != nil {
				p.info.ExitSeq = smp.Seq
			}
		}
		if i == 0 {
			for _, ps := range smp.Procs {
				if p := procs[ps.ID]; p != nil {
					p.addDetail(ps, at)
				}
			}
			continue
		}
		el := smp.Elapsed.Seconds()
		for _, ps := range smp.Procs {
			p := procs[ps.ID]
			if p == nil {
				continue
			}
			if ps.CPUNs > 0 {
				if p.series == nil {
					p.series = make([]float64, n)
				}
				p.series[i-1] += mc(ps.CPUNs, el)
				p.total += ps.CPUNs
			}
			p.addDetail(ps, at)
		}
	}
	for _, p := range procs {
		p.settleMemory()
	}
	s.assemble(procs, samples, secs, opts)
	s.BlockIO = buildBlockIO(opts.BlockIO, procs)
	return s
}

func (p *procAcc) addDetail(ps sample.ProcSample, at float64) {
	if !ps.HasDetail {
		return
	}
	if ps.StatmOnly {
		p.est.n++
		p.est.rss += float64(ps.RSS)
		p.est.pss += float64(ps.PSS)
		p.est.priv += float64(ps.Private)
	} else {
		p.memN++
		p.rss += float64(ps.RSS)
		p.pss += float64(ps.PSS)
		p.priv += float64(ps.Private)
	}
	p.threads = ps.Threads
	pt := &ioPoint{at: at, read: ps.ReadBytes, write: ps.WriteBytes}
	if p.ioFirst == nil {
		p.ioFirst = pt
	}
	p.ioLast = pt
}

func (s *Summary) buildNode(samples []sample.Sample, secs float64) {
	first, last := samples[0].Node, samples[len(samples)-1].Node
	var loadSum float64
	for i := 1; i < len(samples); i++ {
		loadSum += samples[i].Node.Load1
	}
	// Node busy, its series and its mean, come from the one reference (sample.BusyMeter) every verb uses;
	// the split by mode can only come from /proc/stat.
	s.meter = sample.NewBusyMeter(s.Meta, samples)
	s.busy = s.meter.Window(samples)
	series, _ := s.meter.Series(samples)
	s.Node.Busy = stats.Describe(series)
	s.Node.Busy.Mean = s.busy.Millicores // time-weighted
	s.Node.Reference = s.meter.Name()
	if s.Node.CPUs > 0 {
		s.Node.BusyPercent = s.Node.Busy.Mean / float64(s.Node.CPUs) / 10
	}
	d := last.CPU.Sub(first.CPU)
	k := 1000 / secs
	s.Node.ProcStatBusy = d.Busy() * k
	s.Node.Split = map[string]float64{"user": d.User * k, "nice": d.Nice * k, "system": d.System * k,
		"irq": d.IRQ * k, "softirq": d.SoftIRQ * k, "steal": d.Steal * k}
	s.Node.Iowait, s.Node.Idle = d.Iowait*k, d.Idle*k
	s.Node.Load = [3]float64{last.Load1, last.Load5, last.Load15}
	s.Node.LoadMean1 = loadSum / float64(len(samples)-1)
	for res, p := range last.Pressure {
		f, ok := first.Pressure[res]
		if !ok {
			continue
		}
		if s.Node.Pressure == nil {
			s.Node.Pressure = map[string]Pressure{}
		}
		us := secs * 1e6
		s.Node.Pressure[res] = Pressure{SomePercent: float64(p.SomeTotalUs-f.SomeTotalUs) / us * 100,
			FullPercent: float64(p.FullTotalUs-f.FullTotalUs) / us * 100}
	}
}

// transient reports whether a process started and ended inside the window.
func transient(info sample.ProcInfo) bool {
	return info.BornSeq > 0 && info.ExitSeq > 0 && !info.Self
}

// ancestor returns the nearest long-lived ancestor of a short-lived process, or nil.
func ancestor(procs map[int64]*procAcc, p *procAcc) *procAcc {
	seen := 0
	for cur := p; cur.info.ParentID != 0 && seen < 64; seen++ {
		parent := procs[cur.info.ParentID]
		if parent == nil {
			return nil
		}
		if !transient(parent.info) {
			return parent
		}
		cur = parent
	}
	return nil
}

func (s *Summary) assemble(procs map[int64]*procAcc, samples []sample.Sample, secs float64, opts Options) {
	n := len(samples) - 1
	groups := map[string]*Group{}
	groupSeries := map[string][]float64{}
	children := map[string]*Children{}
	ids := make([]int64, 0, len(procs))
	for id := range procs {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	var selfNs, groupNs uint64
	// Short-lived processes first: their CPU moves to their long-lived ancestor.
	owner := map[int64]*procAcc{}
	for _, id := range ids {
		p := procs[id]
		owner[id] = p
		if !transient(p.info) {
			continue
		}
		a := ancestor(procs, p)
		if a == nil {
			continue
		}
		owner[id] = a
		a.kids += p.total
		key := fmt.Sprintf("%d\x00%s", a.info.ID, p.info.Cmdline)
		c := children[key]
		if c == nil {
			c = &Children{ParentPID: a.info.Key.PID, ParentCmdline: a.info.Cmdline, Group: a.info.Group, Cmdline: p.info.Cmdline}
			children[key] = c
		}
		c.Runs++
		c.ns += p.total
		start := p.info.StartTime
		if start.IsZero() {
			start = samples[min(p.info.BornSeq, len(samples)-1)].Time
		}
		c.Starts = append(c.Starts, start)
	}
	for _, id := range ids {
		p := procs[id]
		o := owner[id]
		if p.info.Self {
			selfNs += p.total
			continue
		}
		groupNs += p.total
		gname, gkind := o.info.Group, o.info.GroupKind
		if matches(opts, o.info) {
			g := groups[gname]
			if g == nil {
				g = &Group{Name: gname, Kind: gkind}
				groups[gname] = g
				groupSeries[gname] = make([]float64, n)
			}
			for i, v := range p.series {
				groupSeries[gname][i] += v
			}
			if o != p {
				g.ChildrenCPU += mc(p.total, secs)
				continue
			}
			g.Processes++
			g.RSS += p.memMean(p.rss)
			g.PSS += p.memMean(p.pss)
			g.Private += p.memMean(p.priv)
			g.Threads += p.threads
			r, w := p.ioRates()
			g.ReadBps += r
			g.WriteBps += w
		}
	}
	// Shares are of the reference node busy (exact task time where the kernel offers it).
	s.reconcile(secs, groupNs, selfNs)
	s.SelfBPF = buildSelfBPF(samples[0], samples[len(samples)-1], secs)
	busyNs := s.Reconcile.NodeBusy / 1000 * secs * 1e9
	for name, g := range groups {
		g.CPU = stats.Describe(groupSeries[name])
		g.CPU.Mean = mcFromSeries(groupSeries[name], samples)
		g.SharePct = output.Percent(g.CPU.Mean/1000*secs*1e9, busyNs)
		s.Groups = append(s.Groups, *g)
	}
	sortGroups(s.Groups)
	s.groupSeries = groupSeries
	for _, id := range ids {
		p := procs[id]
		if owner[id] != p || (p.total == 0 && p.kids == 0 && p.memN == 0) {
			continue
		}
		row := p.row(n, secs)
		if p.info.Self {
			s.Self = &row
			continue
		}
		if matches(opts, p.info) {
			s.Processes = append(s.Processes, row)
		}
	}
	sort.SliceStable(s.Processes, func(i, j int) bool {
		return s.Processes[i].CPU.Mean+s.Processes[i].ChildrenCPU > s.Processes[j].CPU.Mean+s.Processes[j].ChildrenCPU
	})
	for _, c := range children {
		c.CPU = mc(c.ns, secs)
		c.CPUPerRunMs = float64(c.ns) / 1e6 / float64(c.Runs)
		c.PerMinute = float64(c.Runs) / secs * 60
		c.PeriodSeconds = medianGap(c.Starts)
		c.SharePct = output.Percent(float64(c.ns), busyNs)
		if opts.Match == nil || opts.Match.MatchString(c.Cmdline) || opts.Match.MatchString(c.ParentCmdline) {
			s.Children = append(s.Children, *c)
		}
	}
	sort.Slice(s.Children, func(i, j int) bool { return s.Children[i].CPU > s.Children[j].CPU })
}

func mcFromSeries(series []float64, samples []sample.Sample) float64 {
	var ns float64
	for i, v := range series {
		ns += v / 1000 * samples[i+1].Elapsed.Seconds()
	}
	total := windowSeconds(samples)
	if total <= 0 {
		return 0
	}
	return ns / total * 1000
}

// matches reports whether a process passes the --match filter and Keep (every process does without them).
func matches(opts Options, info sample.ProcInfo) bool {
	if opts.Keep != nil && !opts.Keep(info) {
		return false
	}
	if opts.Match == nil {
		return true
	}
	return opts.Match.MatchString(info.Cmdline) || opts.Match.MatchString(info.Comm) || opts.Match.MatchString(info.Group)
}

// settleMemory chooses the readings a process's memory is the mean of: those read from smaps_rollup when
// there are any (a sampler reads every process's by the closing sample), statm's estimates otherwise (a
// process gone before its smaps_rollup turn). Mixing the two would pull a process's PSS toward statm's
// anonymous resident pages, which leave out its share of the file pages it maps: for most of a short window
// the idle processes have only those (sample.Options.ExactBaseline).
func (p *procAcc) settleMemory() {
	if p.memN == 0 && p.est.n > 0 {
		p.memN, p.rss, p.pss, p.priv = p.est.n, p.est.rss, p.est.pss, p.est.priv
	}
}

func (p *procAcc) memMean(sum float64) float64 {
	if p.memN == 0 {
		return 0
	}
	return sum / float64(p.memN)
}

func (p *procAcc) ioRates() (float64, float64) {
	if p.ioFirst == nil || p.ioLast == nil {
		return 0, 0
	}
	dt := p.ioLast.at - p.ioFirst.at
	if dt <= 0 || p.ioLast.read < p.ioFirst.read || p.ioLast.write < p.ioFirst.write {
		return 0, 0
	}
	return float64(p.ioLast.read-p.ioFirst.read) / dt, float64(p.ioLast.write-p.ioFirst.write) / dt
}

func (p *procAcc) row(n int, secs float64) Process {
	series := p.series
	if series == nil {
		series = make([]float64, n)
	}
	// A process that lived for part of the window is described over the intervals it lived in.
	lo, hi := 0, n
	if p.info.BornSeq > 0 {
		lo = min(p.info.BornSeq-1, n)
	}
	if p.info.ExitSeq > 0 {
		hi = min(max(p.info.ExitSeq, lo+1), n)
	}
	cpu := stats.Describe(series[lo:hi])
	cpu.Mean = mc(p.total, secs)
	r, w := p.ioRates()
	return Process{PID: p.info.Key.PID, PPID: p.info.PPID, Comm: p.info.Comm, Cmdline: p.info.Cmdline,
		Group: p.info.Group, Kind: p.info.GroupKind, PodUID: p.info.PodUID, Container: p.info.Container,
		PodNS: p.info.PodNS, PodName: p.info.PodName, CtrName: p.info.CtrName,
		CPU: cpu, ChildrenCPU: mc(p.kids, secs), Started: p.info.BornSeq > 0, Exited: p.info.ExitSeq > 0,
		Memory: Memory{RSS: p.memMean(p.rss), PSS: p.memMean(p.pss), Private: p.memMean(p.priv), Threads: p.threads},
		Disk:   Disk{ReadBps: r, WriteBps: w}}
}

// medianGap is the median time between consecutive starts: a run the sampler missed or misnamed (a
// child that exits before its exec is seen keeps its parent's command line) doubles one gap, which would
// skew the mean of the span but not the median.
func medianGap(ts []time.Time) float64 {
	if len(ts) < 2 {
		return 0
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i].Before(ts[j]) })
	gaps := make([]float64, 0, len(ts)-1)
	for i := 1; i < len(ts); i++ {
		gaps = append(gaps, ts[i].Sub(ts[i-1]).Seconds())
	}
	return stats.MedianOf(gaps)
}

// reconcile checks groups + tare + unattributed = node busy against the node's reference (see
// sample.BusyMeter): process counters are exact nanoseconds, and so is the reference where the kernel
// offers task time. /proc/stat charges whole scheduler ticks to user/system (tick sampling: a load that
// runs in step with the tick can be over- or under-counted by tens of percent) and prints 10 ms units; it
// is the reference only when there is no task time. A gap beyond the resolution is a warning attached to
// the unattributed figure, with its likely cause.
func (s *Summary) reconcile(secs float64, groupNs, selfNs uint64) {
	r := &s.Reconcile
	m, w := s.meter, s.busy
	r.Groups = mc(groupNs, secs)
	r.Self = mc(selfNs, secs)
	hz, assumed := s.Meta.TickHZ()
	r.TickHZ, r.TickHZAssumed = hz, assumed
	r.Reference, r.ReferenceKind, r.ReferenceExact, r.ReferenceNote = m.Name(), m.Ref, m.Ref.Exact(), m.Note
	r.NodeBusy, r.Resolution, r.IRQ = w.Millicores, w.Resolution, w.IRQ
	r.ProcStatBusy = s.Node.ProcStatBusy
	r.ProcStatRes = sample.TickResolution(r.ProcStatBusy/1000*secs, secs, hz)
	if m.Ref.Exact() {
		r.ProcStatGap = r.ProcStatBusy - r.NodeBusy
	}
	r.Unattributed = r.NodeBusy - r.Groups - r.Self
	r.Warnings = reconcileWarnings(*r)
	if irq := s.Node.Split["irq"] + s.Node.Split["softirq"]; m.Ref.Exact() && !s.Meta.IRQTimeKnown() && irq > 0 {
		r.Warnings = append(r.Warnings, Warning{Code: WarnAssumedIRQ, Figure: FigureNodeBusy,
			Message: fmt.Sprintf("IRQ time accounting is assumed off: if the kernel accounts irq time apart, node busy lacks the %.1fm of irq and softirq time /proc/stat shows", irq),
			Cause:   "no kernel configuration was found (/proc/config.gz, or /boot/config-RELEASE under --host-root)"})
	}
	r.WithinTolerance = true
	for _, w := range r.Warnings {
		if w.Figure == FigureUnattributed {
			r.WithinTolerance = false
		}
	}
	r.Explanation = fmt.Sprintf("groups %.1fm + tare %.1fm + unattributed %.1fm = %s %.1fm (resolution ±%.1fm",
		r.Groups, r.Self, r.Unattributed, r.Reference, r.NodeBusy, r.Resolution)
	if r.IRQ > 0 {
		r.Explanation += fmt.Sprintf("; plus %.1fm of irq time no process holds, which unattributed may include", r.IRQ)
	}
	r.Explanation += ")"
	tick := fmt.Sprintf("%d Hz", hz)
	if assumed {
		tick += ", assumed: no kernel configuration"
	}
	if m.Ref.Exact() {
		r.Explanation += fmt.Sprintf("; /proc/stat busy %.1fm is %+.1fm from it (tick-sampled at %s: ±%.1fm for random load, more for load in step with the tick)",
			r.ProcStatBusy, r.ProcStatGap, tick, r.ProcStatRes)
	} else {
		r.Explanation += fmt.Sprintf("; tick-sampled at %s", tick)
	}
	if m.Note != "" {
		r.Explanation += "; " + m.Note
	}
}

func windowSeconds(samples []sample.Sample) float64 {
	var d time.Duration
	for _, x := range samples[1:] {
		d += x.Elapsed
	}
	return d.Seconds()
}
