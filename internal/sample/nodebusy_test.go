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
