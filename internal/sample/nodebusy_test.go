package sample

import (
	"math"
	"testing"
	"time"
)

// busySamples are one-second samples: each interval adds task seconds of task time and proc seconds of
// /proc/stat user time, and irq of irq and softirq time each.
func busySamples(task, proc, irq []float64) []Sample {
	t0 := time.Unix(1_700_000_000, 0)
	out := []Sample{{Time: t0, Took: time.Millisecond, Node: Node{TasksCPUNs: 1e12}}}
	for i := range task {
		p := out[i].Node
		n := Node{TasksCPUNs: p.TasksCPUNs + uint64(task[i]*1e9),
			CPU: NodeCPU{User: p.CPU.User + proc[i], IRQ: p.CPU.IRQ + irq[i], SoftIRQ: p.CPU.SoftIRQ + irq[i]}}
		out = append(out, Sample{Seq: i + 1, Time: t0.Add(time.Duration(i+1) * time.Second), Elapsed: time.Second, Took: time.Millisecond, Node: n})
	}
	return out
}

func TestBusyMeter(t *testing.T) {
	t.Parallel()
	task, proc, irq := []float64{0.5, 1.0, 1.5}, []float64{0.6, 0.9, 1.6}, []float64{0.01, 0.02, 0.03}
	v1 := Meta{CPUs: 2, KernelHZ: 250, NodeReference: RefCgroupV1}
	v1IRQ := v1
	v1IRQ.IRQTime = true
	v2IRQ := v1IRQ
	v2IRQ.NodeReference = RefCgroupV2
	legacyV1 := Meta{CPUs: 2, CgroupSource: "/sys/fs/cgroup/cpuacct/cpuacct.usage"}
	legacyV2 := Meta{CPUs: 2, CgroupSource: "/sys/fs/cgroup/cpu.stat", IRQTime: true}
	for _, tc := range []struct {
		name     string
		meta     Meta
		samples  []Sample
		ref      Reference
		series   []float64 // millicores
		irqApart bool
		note     bool
	}{
		{"v1 task time, irq inside it", v1, busySamples(task, proc, irq), RefCgroupV1, []float64{500, 1000, 1500}, false, false},
		{"v1 task time + irq accounted apart", v1IRQ, busySamples(task, proc, irq), RefCgroupV1, []float64{520, 1040, 1560}, true, false},
		{"v2 task time + irq accounted apart", v2IRQ, busySamples(task, proc, irq), RefCgroupV2, []float64{520, 1040, 1560}, true, false},
		{"recording without node_reference", legacyV1, busySamples(task, proc, irq), RefCgroupV1, []float64{500, 1000, 1500}, false, false},
		{"v2 root cpu.stat is /proc/stat in disguise", legacyV2, busySamples(task, proc, irq), RefProcStat, []float64{620, 940, 1660}, false, true},
		{"no task time", Meta{CPUs: 2, NodeReference: RefProcStat}, busySamples(task, proc, irq), RefProcStat, []float64{620, 940, 1660}, false, false},
		{"task time missing in a sample", v1IRQ, func() []Sample {
			s := busySamples(task, proc, irq)
			s[2].Node.TasksCPUNs = 0
			return s
		}(), RefProcStat, []float64{620, 940, 1660}, false, true},
	} {
		m := NewBusyMeter(tc.meta, tc.samples)
		if m.Ref != tc.ref || m.IRQApart != tc.irqApart || (m.Note != "") != tc.note {
			t.Errorf("%s: reference %s, irq apart %v, note %q", tc.name, m.Ref, m.IRQApart, m.Note)
		}
		series, secs := m.Series(tc.samples)
		var cpu float64
		for i := range series {
			if math.Abs(series[i]-tc.series[i]) > 1e-6 {
				t.Errorf("%s: interval %d is %.3fm, want %.3fm", tc.name, i, series[i], tc.series[i])
			}
			cpu += series[i] * secs[i]
		}
		// The window is the time-weighted mean of the intervals, whatever the reference.
		w := m.Window(tc.samples)
		if math.Abs(w.Millicores-cpu/w.Seconds) > 1e-9 || w.Seconds != 3 {
			t.Errorf("%s: window %.6fm over %gs, intervals give %.6fm", tc.name, w.Millicores, w.Seconds, cpu/w.Seconds)
		}
		if w.Resolution <= 0 {
			t.Errorf("%s: resolution %g", tc.name, w.Resolution)
		}
		if tc.ref == RefProcStat && math.Abs(w.Resolution-TickResolution(cpu/1000, 3, tc.meta.KernelHZ)) > 1e-9 {
			t.Errorf("%s: /proc/stat resolution %g is not the tick resolution", tc.name, w.Resolution)
		}
		if wantIRQ := tc.irqApart || tc.ref == RefProcStat; (w.IRQ > 0) != wantIRQ {
			t.Errorf("%s: irq no process holds %.3fm, want some: %v", tc.name, w.IRQ, wantIRQ)
		}
	}
}

func TestTickResolution(t *testing.T) {
	t.Parallel()
	// 60 s at one core busy on a 250 Hz kernel: 1.96·√(60·0.004) + 0.12 = 1.080 s of CPU, 18.0m.
	if got := TickResolution(60, 60, 250); math.Abs(got-18.0) > 0.05 {
		t.Errorf("TickResolution = %.3fm, want 18.0m", got)
	}
	if TickResolution(1, 0, 250) != 0 || TickResolution(1, 1, 0) != TickResolution(1, 1, AssumedHZ) {
		t.Error("degenerate inputs")
	}
}

// TestBusyMeterNoTask: on a kernel without IRQ time accounting whose idle clock is tickless, node busy is
// the task time plus the CPU that ran no task, which is every CPU's wall time less /proc/stat's idle,
// iowait and steal; the intervals still add up to the window, and the window's CPU on no task is what
// unattributed may hold beyond the resolution.
func TestBusyMeterNoTask(t *testing.T) {
	t.Parallel()
	// Two CPUs; intervals of 1 s, 0.5 s and 1 s. Task seconds and idle, iowait and steal seconds per
	// interval: not-idle is 0.6, 0.55 and 1.6 CPU-seconds, 0.1, 0.05 and 0.1 more than the tasks ran.
	el := []time.Duration{time.Second, 500 * time.Millisecond, time.Second}
	task, idle, iowait, steal := []float64{0.5, 0.5, 1.5}, []float64{1.3, 0.4, 0.4}, []float64{0.1, 0, 0}, []float64{0, 0.05, 0}
	t0 := time.Unix(1_700_000_000, 0)
	samples := []Sample{{Time: t0, Took: time.Millisecond, Node: Node{TasksCPUNs: 1e12}}}
	for i := range task {
		p := samples[i]
		n := Node{TasksCPUNs: p.Node.TasksCPUNs + uint64(task[i]*1e9), CPU: NodeCPU{Idle: p.Node.CPU.Idle + idle[i],
			Iowait: p.Node.CPU.Iowait + iowait[i], Steal: p.Node.CPU.Steal + steal[i], User: p.Node.CPU.User + task[i]}}
		samples = append(samples, Sample{Seq: i + 1, Time: p.Time.Add(el[i]), Elapsed: el[i], Took: time.Millisecond, Node: n})
	}
	meta := Meta{CPUs: 2, KernelHZ: 250, NodeReference: RefCgroupV1, TicklessIdle: true}
	m := NewBusyMeter(meta, samples)
	if !m.NoTask || m.IRQApart || m.Ref != RefCgroupV1 {
		t.Fatalf("meter %+v, want task time of cgroup v1 with the CPU on no task", m)
	}
	series, _ := m.Series(samples)
	want := []float64{600, 1100, 1600} // millicores: 0.6 CPU-s in 1 s, 0.55 in 0.5 s, 1.6 in 1 s
	for i := range want {
		if math.Abs(series[i]-want[i]) > 1e-6 {
			t.Errorf("interval %d: %.3fm, want %.3fm", i, series[i], want[i])
		}
	}
	w := m.Window(samples)
	if math.Abs(w.Millicores-2750/2.5) > 1e-6 || math.Abs(w.IRQ-250/2.5) > 1e-6 {
		t.Errorf("window %.3fm with %.3fm on no task, want 1100m with 100m", w.Millicores, w.IRQ)
	}
	for name, meta := range map[string]Meta{
		"idle from ticks":        {CPUs: 2, NodeReference: RefCgroupV1},
		"irq accounted apart":    {CPUs: 2, NodeReference: RefCgroupV1, TicklessIdle: true, IRQTime: true},
		"unknown number of CPUs": {NodeReference: RefCgroupV1, TicklessIdle: true},
	} {
		if m := NewBusyMeter(meta, samples); m.NoTask {
			t.Errorf("%s: the CPU on no task is added", name)
		}
	}
}

// TestBusyMeterNoTaskFloor: where /proc/stat's idle leaves less busy than the tasks ran (the reads'
// timing), node busy is the task time: for a pair, and for a window, whose intervals still add up to it.
func TestBusyMeterNoTaskFloor(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1_700_000_000, 0)
	samples := []Sample{{Time: t0, Node: Node{TasksCPUNs: 1e12}}}
	for i, idle := range []float64{1.2, 1.6} { // tasks ran 0.5 s a second; idle leaves 0.8 then 0.4 s busy
		p := samples[i]
		n := Node{TasksCPUNs: p.Node.TasksCPUNs + 5e8, CPU: NodeCPU{Idle: p.Node.CPU.Idle + idle}}
		samples = append(samples, Sample{Seq: i + 1, Time: p.Time.Add(time.Second), Elapsed: time.Second, Node: n})
	}
	m := NewBusyMeter(Meta{CPUs: 2, NodeReference: RefCgroupV1, TicklessIdle: true}, samples)
	if got := m.Between(samples[1], samples[2]); math.Abs(got-0.5) > 1e-9 {
		t.Errorf("pair: %.3f CPU-s, want the task time 0.5", got)
	}
	if got := m.Between(samples[0], samples[1]); math.Abs(got-0.8) > 1e-9 {
		t.Errorf("pair: %.3f CPU-s, want 0.8", got)
	}
	// The window: tasks 1.0 CPU-s, not idle 1.2: 0.2 on no task, 600m; the intervals 800m and 400m.
	series, _ := m.Series(samples)
	if w := m.Window(samples); math.Abs(w.Millicores-600) > 1e-6 || math.Abs(series[0]-800) > 1e-6 || math.Abs(series[1]-400) > 1e-6 {
		t.Errorf("window %.3fm, intervals %v; want 600m from 800m and 400m", w.Millicores, series)
	}
	samples[2].Node.CPU.Idle += 0.4 // now not idle is 0.8 CPU-s in all, below the tasks' 1.0
	series, _ = m.Series(samples)
	if w := m.Window(samples); math.Abs(w.Millicores-500) > 1e-6 || w.IRQ != 0 || math.Abs(series[0]-500) > 1e-6 || math.Abs(series[1]-500) > 1e-6 {
		t.Errorf("window %.3fm (%.3fm on no task), intervals %v; want the task time, 500m, throughout", w.Millicores, w.IRQ, series)
	}
}
