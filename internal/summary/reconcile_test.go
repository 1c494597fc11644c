package summary

import (
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tare-dev/tare/internal/sample"
)

// TestReconcileWarnings: a gap beyond the resolution is a typed warning on the unattributed figure, with
// the cause that fits its sign.
func TestReconcileWarnings(t *testing.T) {
	t.Parallel()
	v1 := sample.Meta{CPUs: 2, KernelHZ: 250, KernelConfig: "/proc/config.gz", NodeReference: sample.RefCgroupV1}
	for _, tc := range []struct {
		name      string
		meta      sample.Meta
		procNs    uint64 // one process's CPU per interval; the task time is 300 ms per interval
		codes     []string
		cause     string
		reference sample.Reference
	}{
		{"reconciles", v1, 295e6, nil, "", sample.RefCgroupV1},
		{"over-attributed", v1, 400e6, []string{WarnOverAttributed}, "credited twice", sample.RefCgroupV1},
		{"under-attributed", v1, 100e6, []string{WarnUnderAttributed}, "could not read", sample.RefCgroupV1},
		{"over-attributed on cgroup v2", func() sample.Meta { m := v1; m.NodeReference = sample.RefCgroupV2; return m }(), 400e6,
			[]string{WarnOverAttributed}, "root cgroup that exited", sample.RefCgroupV2},
		{"no kernel configuration", sample.Meta{CPUs: 2, KernelConfig: sample.KernelConfigAssumed}, 300e6, []string{WarnAssumedTick}, "no kernel configuration", sample.RefProcStat},
		{"no kernel configuration, task time", sample.Meta{CPUs: 2, KernelConfig: sample.KernelConfigAssumed, NodeReference: sample.RefCgroupV1}, 295e6,
			[]string{WarnAssumedIRQ}, "no kernel configuration", sample.RefCgroupV1},
	} {
		r := Build(tc.meta, burner(0.002, tc.procNs), Options{}).Reconcile
		var codes []string
		for _, w := range r.Warnings {
			codes = append(codes, w.Code)
			if w.Message == "" || !strings.Contains(w.Cause, tc.cause) {
				t.Errorf("%s: warning %+v, want a cause mentioning %q", tc.name, w, tc.cause)
			}
		}
		if diff := cmp.Diff(tc.codes, codes); diff != "" {
			t.Errorf("%s: warnings (-want +got):\n%s\n%s", tc.name, diff, r.Explanation)
		}
		gapWarned := len(codes) > 0 && (codes[0] == WarnOverAttributed || codes[0] == WarnUnderAttributed)
		if r.WithinTolerance == gapWarned || r.ReferenceKind != tc.reference {
			t.Errorf("%s: within tolerance %v, reference %s", tc.name, r.WithinTolerance, r.ReferenceKind)
		}
	}
}

// burner is four 1 s intervals of 300 ms of task time and softIRQ seconds of softirq time each, one
// process ("burn", in group burner) holding procNs of CPU each.
func burner(softIRQ float64, procNs uint64) []sample.Sample {
	return series([]float64{0.3, 0.3, 0.3, 0.3}, func(i int, s *sample.Sample) {
		s.Node.TasksCPUNs = 1e12 + uint64(i)*300e6
		s.Node.CPU.SoftIRQ = float64(i) * softIRQ
		if i == 0 {
			s.New = []sample.ProcInfo{{ID: 1, Group: "burner", Cmdline: "burn"}}
			return
		}
		s.Procs = []sample.ProcSample{{ID: 1, CPUNs: procNs}}
	})
}

// TestNodeBusyIsOneFigure: the node's busy mean, its share of the CPUs and the reconciliation's node busy
// are one figure from one reference.
func TestNodeBusyIsOneFigure(t *testing.T) {
	t.Parallel()
	meta := sample.Meta{CPUs: 2, KernelHZ: 250, IRQTime: true, NodeReference: sample.RefCgroupV1}
	ss := series([]float64{0.5, 0.5}, func(i int, s *sample.Sample) {
		s.Node.TasksCPUNs = 1e12 + uint64(i)*400e6
		s.Node.CPU.IRQ = float64(i) * 0.01
	})
	s := Build(meta, ss, Options{})
	// 410m (below) of a 2-CPU node's 2000m is 20.5%: the share from the fixture's numbers, not from the code's sum.
	if s.Node.Busy.Mean != s.Reconcile.NodeBusy || math.Abs(s.Node.Busy.Mean-410) > 1e-9 || math.Abs(s.Node.BusyPercent-20.5) > 1e-9 {
		t.Errorf("node busy %.3fm (%.2f%%), reconciliation %.3fm", s.Node.Busy.Mean, s.Node.BusyPercent, s.Reconcile.NodeBusy)
	}
	// 400 ms of task time and 10 ms of irq time accounted apart per second; /proc/stat says 510 ms.
	if math.Abs(s.Reconcile.NodeBusy-410) > 1e-9 || math.Abs(s.Node.ProcStatBusy-510) > 1e-9 || s.Node.Reference != s.Reconcile.Reference {
		t.Errorf("node busy %.3fm from %q, /proc/stat %.3fm", s.Reconcile.NodeBusy, s.Node.Reference, s.Node.ProcStatBusy)
	}
}

// TestReconcilePrintsItsBound: irq time that no process holds is node busy that no group can hold, so
// unattributed may exceed the resolution by it without a warning (a report once read "unattributed
// 11.4m" beside "resolution ±6.9m" and "within resolution: yes"). The table prints the bound the check
// uses, and the explanation the irq time.
func TestReconcilePrintsItsBound(t *testing.T) {
	t.Parallel()
	// Task time 300 ms a second, irq time accounted apart 30 ms a second: node busy 330m, of which 30m
	// no process holds. The one process holds all 300 ms of task time: unattributed 30m.
	meta := sample.Meta{CPUs: 2, KernelHZ: 250, KernelConfig: "/proc/config.gz", IRQTime: true, NodeReference: sample.RefCgroupV1}
	s := Build(meta, burner(0.03, 300e6), Options{})
	r := s.Reconcile
	// The fixture's case: unattributed beyond the resolution, within it plus the irq time.
	if !(r.Unattributed > r.Resolution && r.Unattributed <= r.Resolution+r.IRQ) || !r.WithinTolerance {
		t.Fatalf("fixture: unattributed %.1fm, resolution ±%.1fm, irq %.1fm, within %v; want beyond the resolution, within it plus the irq time",
			r.Unattributed, r.Resolution, r.IRQ, r.WithinTolerance)
	}
	var b strings.Builder
	if err := s.Table(&b); err != nil {
		t.Fatal(err)
	}
	_, table, _ := strings.Cut(b.String(), "\nRECONCILIATION  ")
	for _, want := range []string{
		"(resolution ±11.6m; plus 30.0m of irq time no process holds, which unattributed may include)",
		"\n  unattributed 30.0m within tolerance: yes (-11.6m to +41.6m: the ±11.6m resolution, plus the 30.0m of irq time no process holds)\n",
	} {
		if !strings.Contains(table, want) {
			t.Errorf("reconciliation printed\n%s\nwant it to hold %q", table, want)
		}
	}
	if strings.Contains(table, "within resolution: yes") {
		t.Errorf("reconciliation printed %q beside an unattributed figure beyond the resolution:\n%s", "within resolution: yes", table)
	}
}
