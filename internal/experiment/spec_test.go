package experiment

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/tare-dev/tare/internal/compare"
)

func TestParseErrors(t *testing.T) {
	base := "name: x\ntrials: 4\nwindow: 10s\n"
	for _, tc := range []struct{ name, yaml, want string }{
		{"unknown field", base + "variants: [{name: a}, {name: b}]\nwindw: 5s\n", `unknown field "windw"`},
		{"one trial", "name: x\ntrials: 1\nwindow: 10s\nvariants: [{name: a}, {name: b}]\n", "at least 2"},
		{"no window", "name: x\ntrials: 4\nvariants: [{name: a}, {name: b}]\n", "window"},
		{"one variant", base + "variants: [{name: a}]\n", "at least 2"},
		{"unknown component", base + "variants: [{name: a}, {name: b, set: [kube-dns.replicas=1]}]\n", "unknown component kube-dns"},
		{"no flag", base + "variants: [{name: a}, {name: b, set: [etcd=1]}]\n", "no .FLAG"},
		{"two baselines", base + "variants: [{name: a, baseline: true}, {name: b, baseline: true}]\n", "one is the baseline"},
		{"same name", base + "variants: [{name: a}, {name: a}]\n", "two variants are named"},
		{"bad scale", base + "variants: [{name: a}, {name: b, scale: [coredns=1]}]\n", "NAMESPACE/DEPLOYMENT=REPLICAS"},
		{"sweep and variants", base + "variants: [{name: a}, {name: b}]\nsweep: {flag: etcd.snapshot-count, values: [1, 2]}\n", "not both"},
		{"short sweep", base + "sweep: {flag: etcd.snapshot-count, values: [1]}\n", "at least 2 values"},
		{"unknown metric", base + "variants: [{name: a}, {name: b}]\nmetrics: [cpu]\n", `unknown metric "cpu"`},
		{"unknown primary", base + "variants: [{name: a}, {name: b}]\nprimary: foo-cpu\n", `unknown primary metric "foo-cpu"`},
		{"bad duration", "name: x\ntrials: 4\nwindow: soon\nvariants: [{name: a}, {name: b}]\n", "duration"},
		{"bad profile", base + "target: {lab: {profile: fast}}\nvariants: [{name: a}, {name: b}]\n", `unknown profile "fast"`},
		{"negative tolerance", base + "variants: [{name: a}, {name: b}]\nguard: {tolerance: -5%}\n", "want a positive percentage"},
		{"NaN tolerance", base + "variants: [{name: a}, {name: b}]\nguard: {tolerance: NaN%}\n", "finite percentage"},
		{"both targets", base + "target: {lab: {}, commands: {apply: 'true'}}\nvariants: [{name: a}, {name: b}]\n", "not both"},
		{"replicas with nodes", base + "target: {lab: {replicas: 3}}\nvariants: [{name: a}, {name: b}]\n", "control_plane_only: true"},
		{"negative replicas", base + "target: {lab: {replicas: -1, control_plane_only: true}}\nvariants: [{name: a}, {name: b}]\n", "want 1 to"},
		{"too many replicas", base + "target: {lab: {replicas: 41, control_plane_only: true}}\nvariants: [{name: a}, {name: b}]\n", "want 1 to"},
		{"replicas and pause", base + "target: {lab: {replicas: 2, control_plane_only: true}}\nvariants: [{name: a}, {name: b, pause: true}]\n", "pause freezes one lab"},
		{"concurrent without replicas", base + "target: {lab: {concurrent: true, control_plane_only: true}}\nvariants: [{name: a}, {name: b}]\n", "multiple of 2 from 4"},
		{"concurrent uneven", base + "target: {lab: {replicas: 5, concurrent: true, control_plane_only: true}}\nvariants: [{name: a}, {name: b}]\n", "(e.g. 6)"},
		{"concurrent one lab a variant", base + "target: {lab: {replicas: 3, concurrent: true, control_plane_only: true}}\nvariants: [{name: a}, {name: b}, {name: c}]\n", "from 6"},
		{"concurrent node busy", base + "target: {lab: {replicas: 4, concurrent: true, control_plane_only: true}}\nvariants: [{name: a}, {name: b}]\nmetrics: [node-busy]\n", "whole node's"},
		{"concurrent primary node busy", base + "target: {lab: {replicas: 4, concurrent: true, control_plane_only: true}}\nvariants: [{name: a}, {name: b}]\nprimary: node-busy\n", "whole node's"},
		{"concurrent primary ready", base + "target: {lab: {replicas: 4, concurrent: true, control_plane_only: true}}\nvariants: [{name: a}, {name: b}]\nprimary: ready-seconds\n", "needs a node"},
		{"concurrent guard deployment", base + "target: {lab: {replicas: 4, concurrent: true, control_plane_only: true}}\nvariants: [{name: a}, {name: b}]\nguard: {deployment: true}\n", "needs a node"},
		{"negative settle", base + "target: {lab: {settle: -1s}}\nvariants: [{name: a}, {name: b}]\n", "target.lab.settle -1s"},
		{"long settle", base + "target: {lab: {settle: 1h}}\nvariants: [{name: a}, {name: b}]\n", "want 0s to 10m0s"},
		{"replicas and kwok", base + "target: {lab: {replicas: 2, control_plane_only: true}}\nvariants: [{name: a}, {name: b, set: [kwok.v=2]}]\n", "restart alone"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestParseSweepAndDefaults(t *testing.T) {
	s, err := Parse([]byte("name: snap\ntrials: 3\nwindow: 20s\nsweep: {flag: etcd.snapshot-count, values: [100000, \"500\"]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Variants) != 2 || !s.Variants[0].Baseline || s.Variants[1].Set[0] != "etcd.snapshot-count=500" || s.Variants[0].Name != "100000" {
		t.Errorf("sweep variants = %+v", s.Variants)
	}
	if s.Alpha != 0.05 || s.Interval.Duration != time.Second || s.Guard.Tolerance != 20 || s.Target.Lab == nil || s.Target.Lab.settle() != sharedSettle {
		t.Errorf("defaults: alpha %v interval %v tolerance %v lab %v", s.Alpha, s.Interval, s.Guard.Tolerance, s.Target.Lab)
	}
	s, err = Parse([]byte("name: snap\ntrials: 3\nwindow: 20s\ntarget: {lab: {settle: 0s}}\nvariants: [{name: a}, {name: b}]\n"))
	if err != nil || s.Target.Lab.settle() != 0 {
		t.Errorf("settle: 0s gives %v (%v), want no settle", s.Target.Lab.settle(), err)
	}
}

func TestPlanIsInterleavedAndSeeded(t *testing.T) {
	s, err := Parse([]byte("name: x\ntrials: 6\nwindow: 10s\nseed: 42\nvariants: [{name: a}, {name: b}, {name: c}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	p1, p2 := Plan(s), Plan(s)
	orders := map[string]bool{}
	for round := 0; round < 6; round++ {
		seen := map[string]bool{}
		var order string
		for _, tr := range p1[round*3 : round*3+3] {
			seen[tr.Variant] = true
			order += tr.Variant
			if tr.Round != round+1 {
				t.Errorf("trial %d in round %d, want %d", tr.Seq, tr.Round, round+1)
			}
		}
		if len(seen) != 3 {
			t.Errorf("round %d runs %s, want each variant once", round+1, order)
		}
		orders[order] = true
	}
	if len(orders) < 2 {
		t.Errorf("every round in the same order: not randomised")
	}
	for i := range p1 {
		if p1[i].Variant != p2[i].Variant || p1[i].Seq != p2[i].Seq {
			t.Fatalf("the same seed gave a different plan")
		}
	}
}

// TestAnalyzeDesign: the comparison sees the spec's baseline first whatever its place in the file, the
// others in the file's order, and the spec's name, alpha, primary metric, tolerance and sweep.
func TestAnalyzeDesign(t *testing.T) {
	t.Parallel()
	s, err := Parse([]byte("name: x\ntrials: 4\nwindow: 10s\nalpha: 0.1\nprimary: etcd-cpu\nguard: {tolerance: 30%}\n" +
		"variants: [{name: a}, {name: b, baseline: true}, {name: c}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := compare.Design{Name: "x", Variants: []string{"b", "a", "c"}, Alpha: 0.1, Primary: "etcd-cpu", Tolerance: 30}
	if diff := cmp.Diff(want, s.design()); diff != "" {
		t.Errorf("design (-want +got):\n%s", diff)
	}
	sw, err := Parse([]byte("name: snap\ntrials: 3\nwindow: 20s\nsweep: {flag: etcd.snapshot-count, values: [100000, \"500\"]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if d := sw.design(); d.Sweep != sw.Sweep || !slices.Equal(d.Variants, []string{"100000", "500"}) {
		t.Errorf("sweep design = %+v", d)
	}
	var trials []Trial
	for i, v := range []string{"a", "b", "c", "b"} {
		trials = append(trials, Trial{Seq: i + 1, Variant: v, Status: "ok", Metrics: map[string]float64{"etcd-cpu": float64(10 + i)}})
	}
	sameNum := cmp.Comparer(func(a, b compare.Num) bool { return a == b || math.IsNaN(float64(a)) && math.IsNaN(float64(b)) })
	if diff := cmp.Diff(compare.Analyze(want, trials), Analyze(s, nil, trials), cmpopts.EquateNaNs(), sameNum); diff != "" {
		t.Errorf("Analyze differs from compare.Analyze of the design (-want +got):\n%s", diff)
	}
}

func TestSharedLab(t *testing.T) {
	base := "name: x\ntrials: 4\nwindow: 10s\n"
	for _, tc := range []struct {
		name, yaml string
		want       bool
	}{
		{"a/a", base + "variants: [{name: a}, {name: b}]\n", true},
		{"run and pause only", base + "variants: [{name: a, set: [etcd.snapshot-count=1000]}, {name: b, set: [etcd.snapshot-count=1000], run: 'sleep 1', pause: true}]\n", true},
		{"a flag", base + "variants: [{name: a}, {name: b, set: [etcd.snapshot-count=1000]}]\n", false},
		{"flags in another order", base + "variants: [{name: a, set: [etcd.snapshot-count=1000, kube-apiserver.v=2]}, {name: b, set: [kube-apiserver.v=2, etcd.snapshot-count=1000]}]\n", false},
		{"a scale", base + "variants: [{name: a}, {name: b, scale: [kube-system/coredns=0]}]\n", false},
		{"commands target", base + "target: {commands: {apply: 'true'}}\nvariants: [{name: a}, {name: b}]\n", false},
		{"sweep", base + "sweep: {flag: etcd.snapshot-count, values: [1, 2]}\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Parse([]byte(tc.yaml))
			if err != nil {
				t.Fatal(err)
			}
			if got := s.SharedLab(); got != tc.want {
				t.Errorf("SharedLab() = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestVariedComponents(t *testing.T) {
	base := "name: x\ntrials: 4\nwindow: 10s\n"
	for _, tc := range []struct {
		name, yaml string
		want       []string
	}{
		{"a/a", base + "variants: [{name: a}, {name: b}]\n", nil},
		{"scheduler and controller manager", base + "variants: [{name: a}, {name: b, set: [kube-scheduler.v=2, kube-controller-manager.v=2]}]\n",
			[]string{"kube-controller-manager", "kube-scheduler"}},
		{"the target's flag overridden", base + "target: {lab: {set: [etcd.snapshot-count=1000]}}\nvariants: [{name: a}, {name: b, set: [etcd.snapshot-count=1000]}, {name: c, set: [etcd.snapshot-count=5]}]\n",
			[]string{"etcd"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Parse([]byte(tc.yaml))
			if err != nil {
				t.Fatal(err)
			}
			// Registry order, whatever the order in the spec.
			if got := s.variedComponents(); !slices.Equal(got, tc.want) {
				t.Errorf("variedComponents() = %v, want %v", got, tc.want)
			}
		})
	}
}
