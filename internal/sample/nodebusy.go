package sample

import (
	"math"
	"strings"
	"time"
)

// Reference names the counter node busy is read from. It is stored in Meta.NodeReference and says what
// Node.TasksCPUNs holds.
type Reference string

// The references, most exact first.
const (
	// RefCgroupV1 is the cgroup v1 root's cpuacct.usage: the scheduler's exact runtime of every task.
	RefCgroupV1 Reference = "cgroup-v1-cpuacct"
	// RefCgroupV2 is tare's cgroup v2 reference: the top-level cgroups' usage_usec (exact) plus the
	// schedstat runtime of the threads in the root cgroup (exact while they live; see kernel.CgroupV2Tasks).
	RefCgroupV2 Reference = "cgroup-v2-tasks"
	// RefCgroupV2RootStat is the cgroup v2 root's cpu.stat, which recordings of earlier tares hold. The kernel
	// synthesises it from the tick counters /proc/stat prints, so it is read as /proc/stat busy.
	RefCgroupV2RootStat Reference = "cgroup-v2-root-stat"
	// RefProcStat is /proc/stat busy: user + nice + system + irq + softirq + steal, charged a tick at a time.
	RefProcStat Reference = "proc-stat"
)

// Describe says what the reference is and how exact, for people.
func (r Reference) Describe() string {
	switch r {
	case RefCgroupV1:
		return "exact task time of cgroup v1 cpuacct.usage"
	case RefCgroupV2:
		return "exact task time of cgroup v2: top-level cgroups + root-cgroup threads"
	}
	return "/proc/stat busy, tick-sampled"
}

// Exact says whether the reference counts the scheduler's nanoseconds rather than sampling ticks.
func (r Reference) Exact() bool { return r == RefCgroupV1 || r == RefCgroupV2 }

// BusyReference is the reference the samples of m carry in Node.TasksCPUNs. Recordings made before
// Meta.NodeReference existed name only the file they read (CgroupSource).
func (m Meta) BusyReference() Reference {
	switch {
	case m.NodeReference != "":
		return m.NodeReference
	case strings.HasSuffix(m.CgroupSource, "cpuacct.usage"):
		return RefCgroupV1
	case strings.HasSuffix(m.CgroupSource, "cpu.stat"):
		return RefCgroupV2RootStat
	}
	return RefProcStat
}

// TickHZ is the scheduler tick /proc/stat samples at, and whether it is an assumption (no kernel
// configuration was found, or the recording predates tare reading it).
func (m Meta) TickHZ() (hz int, assumed bool) {
	if m.KernelHZ > 0 {
		return m.KernelHZ, false
	}
	return AssumedHZ, true
}

// IRQTimeKnown says whether Meta.IRQTime is read from the kernel's configuration rather than assumed off.
func (m Meta) IRQTimeKnown() bool {
	return m.KernelConfig != "" && m.KernelConfig != KernelConfigAssumed || m.KernelConfig == "" && m.KernelHZ > 0
}

// BusyMeter measures node busy over one series of samples, from one reference for the whole series, so
// that the busy of every interval and of the window agree: the window's is the sum of its intervals'. It
// is the one definition of node busy that measure, report, explain, diff, export and experiment use.
type BusyMeter struct {
	// Ref is the reference used; Recorded the one the samples carry. They differ when some sample lacks
	// the task time, or the recorded one is /proc/stat in disguise; Note then says why.
	Ref, Recorded Reference
	Note          string
	// IRQApart: irq and softirq time from /proc/stat are added to a task-time reference, because the
	// kernel accounts them apart from task time (CONFIG_IRQ_TIME_ACCOUNTING). Without it, irq time is
	// already inside the runtime of the task it interrupted.
	IRQApart bool
	// NoTask: the CPU that ran no task is added to a task-time reference where the kernel keeps irq time
	// inside task time (no IRQ time accounting) and counts idle time exactly (tickless idle). That is the
	// interrupts and softirqs served on an otherwise idle CPU (a packet that arrives while the CPU sleeps)
	// and the idle loop's way in and out: busy in /proc/stat and in every node dashboard, in no task's
	// runtime. It is the wall time of every CPU less /proc/stat's idle, iowait and steal, less the task
	// time; under network load it is 5-15% of busy. Where it comes out below 0 (the reads' timing), the
	// exact task time stands alone: node busy is never below it.
	NoTask   bool
	cpus, hz int
}

// NewBusyMeter picks the reference for samples described by m: the recorded task time when every sample
// has it and it never goes back, else /proc/stat busy.
func NewBusyMeter(m Meta, samples []Sample) BusyMeter {
	hz, _ := m.TickHZ()
	b := BusyMeter{Ref: RefProcStat, Recorded: m.BusyReference(), cpus: max(1, m.CPUs), hz: hz}
	switch {
	case b.Recorded == RefCgroupV2RootStat:
		b.Note = "the cgroup v2 root's cpu.stat this recording holds is synthesised from the tick counters /proc/stat prints, so /proc/stat busy is the reference"
		return b
	case !b.Recorded.Exact():
		return b
	}
	for i, s := range samples {
		if s.Node.TasksCPUNs == 0 || i > 0 && s.Node.TasksCPUNs < samples[i-1].Node.TasksCPUNs {
			b.Note = "the task time is missing from some samples, so /proc/stat busy is the reference"
			return b
		}
	}
	b.Ref, b.IRQApart = b.Recorded, m.IRQTime
	b.NoTask = !m.IRQTime && m.TicklessIdle && m.CPUs > 0
	return b
}

// Name is the reference in words, with the irq time when it is added.
func (b BusyMeter) Name() string {
	switch {
	case b.IRQApart:
		return b.Ref.Describe() + " + irq time"
	case b.NoTask:
		return b.Ref.Describe() + " + CPU on no task (irq on idle CPUs, from /proc/stat's tickless idle)"
	}
	return b.Ref.Describe()
}

// Between is node busy from sample a to the next sample c, in CPU seconds, its CPU on no task taken as 0
// where it comes out below 0. For a running total, add up Parts instead: one interval's CPU on no task is
// noisy at 10 ms, and only the sum of the raw figures lets that noise cancel.
func (b BusyMeter) Between(a, c Sample) float64 {
	task, notask := b.Parts(a, c)
	return task + max(0, notask)
}

// Parts is node busy from sample a to the next sample c, in CPU seconds, as the reference's figure and the
// CPU on no task (NoTask; 0 otherwise), which can come out a little below 0 over one interval.
func (b BusyMeter) Parts(a, c Sample) (ref, notask float64) {
	return b.parts(a, c, intervalSeconds(a, c))
}

// parts is node busy from sample a to sample c, secs apart, in CPU seconds: the reference's figure, and
// the CPU on no task to add to it (0 unless NoTask).
func (b BusyMeter) parts(a, c Sample, secs float64) (ref, notask float64) {
	d := c.Node.CPU.Sub(a.Node.CPU)
	if b.Ref == RefProcStat {
		return d.Busy(), 0
	}
	v := float64(c.Node.TasksCPUNs-a.Node.TasksCPUNs) / 1e9
	switch {
	case b.IRQApart:
		v += d.IRQ + d.SoftIRQ
	case b.NoTask:
		notask = secs*float64(b.cpus) - d.Idle - d.Iowait - d.Steal - v
	}
	return v, notask
}

// Series is node busy over each interval in millicores (index i is the interval ending at samples[i+1]),
// and each interval's length in seconds: the monotonic Elapsed, or the wall-clock gap in recordings
// without it. The CPU on no task of one interval is what /proc/stat's 10 ms units and the reads' timing
// leave of it, and can come out a little below 0; it is added as it is, so that the intervals add up to
// the window, unless the window's is below 0, when none is added.
func (b BusyMeter) Series(samples []Sample) (mc, seconds []float64) {
	useNoTask := b.NoTask && b.windowNoTask(samples) > 0
	for i := 1; i < len(samples); i++ {
		el := intervalSeconds(samples[i-1], samples[i])
		v := 0.0
		if el > 0 {
			ref, notask := b.parts(samples[i-1], samples[i], el)
			if useNoTask {
				ref += notask
			}
			v = ref / el * 1000
		}
		mc, seconds = append(mc, v), append(seconds, el)
	}
	return mc, seconds
}

// span is the monotonic time the samples cover, the sum of their intervals.
func span(samples []Sample) time.Duration {
	var d time.Duration
	for i := 1; i < len(samples); i++ {
		d += intervalLength(samples[i-1], samples[i])
	}
	return d
}

// windowNoTask is the CPU on no task over the whole series, in CPU seconds.
func (b BusyMeter) windowNoTask(samples []Sample) float64 {
	if len(samples) < 2 {
		return 0
	}
	_, notask := b.parts(samples[0], samples[len(samples)-1], span(samples).Seconds())
	return notask
}

func intervalSeconds(a, c Sample) float64 { return intervalLength(a, c).Seconds() }

func intervalLength(a, c Sample) time.Duration {
	if c.Elapsed > 0 {
		return c.Elapsed
	}
	return c.Time.Sub(a.Time)
}

// Busy is node busy over a window, with what qualifies it. CPU figures are millicores.
type Busy struct {
	Millicores float64
	Seconds    float64 // the window, monotonic
	// Resolution is how far the figure can be from the truth either way (95%).
	Resolution float64
	// IRQ is the irq and softirq time the figure holds that may be charged to no process: all of it when
	// the kernel accounts irq time apart, and in /proc/stat busy always (without IRQ time accounting a tick
	// that lands in an interrupt on an idle CPU is busy there, yet no task ran). 0 for task time
	// without IRQ time accounting, which holds irq time only inside the tasks it interrupted.
	IRQ float64
}

// Window is node busy over the whole series: the time-weighted mean of Series.
func (b BusyMeter) Window(samples []Sample) Busy {
	if len(samples) < 2 {
		return Busy{}
	}
	first, last := samples[0], samples[len(samples)-1]
	secs := span(samples).Seconds()
	if secs <= 0 {
		return Busy{}
	}
	ref, notask := b.parts(first, last, secs)
	notask = max(0, notask)
	cpu := ref + notask
	w := Busy{Millicores: cpu / secs * 1000, Seconds: secs}
	d := last.Node.CPU.Sub(first.Node.CPU)
	switch {
	case b.IRQApart || b.Ref == RefProcStat:
		w.IRQ = (d.IRQ + d.SoftIRQ) / secs * 1000
	case b.NoTask:
		w.IRQ = notask / secs * 1000
	}
	if b.Ref == RefProcStat {
		w.Resolution = TickResolution(cpu, secs, b.hz)
		return w
	}
	// At each end of the window the processes and the reference are read up to Took apart: at most Took
	// of CPU per core can fall between them.
	edges := (first.Took + last.Took).Seconds()
	if edges <= 0 {
		edges = (4 * time.Millisecond).Seconds() // recordings without timings: a typical sample
	}
	w.Resolution = math.Max(0.02*w.Millicores, edges*float64(b.cpus)/secs*1000)
	if b.IRQApart || b.NoTask {
		w.Resolution += 2 * 0.01 / secs * 1000 // irq and softirq, or idle and iowait, are printed in whole USER_HZ units
	}
	return w
}

// TickResolution is how far /proc/stat busy over secs seconds can be from the truth (95%, millicores) for
// load that runs at random with respect to the tick: each tick charges a whole 1/hz to whatever it lands
// on, and each of six fields is printed in 10 ms units at both ends. Load that runs in step with the tick
// can be off by far more.
func TickResolution(busyCPUSeconds, secs float64, hz int) float64 {
	if secs <= 0 {
		return 0
	}
	if hz <= 0 {
		hz = AssumedHZ
	}
	tick := 1 / float64(hz)
	return (1.96*math.Sqrt(math.Max(busyCPUSeconds, tick)*tick) + 2*6*0.01) / secs * 1000
}
