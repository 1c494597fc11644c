package summary

import (
	"fmt"
	"math"
	"regexp"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tare-dev/tare/internal/sample"
	"github.com/tare-dev/tare/internal/warning"
)

// series builds samples one second apart; busy[i] is node busy seconds in interval i.
func series(busy []float64, perSample func(i int, s *sample.Sample)) []sample.Sample {
	t0 := time.Unix(1_700_000_000, 0)
	out := []sample.Sample{{Seq: 0, Time: t0}}
	cum := 0.0
	for i, b := range busy {
		cum += b
		s := sample.Sample{Seq: i + 1, Time: t0.Add(time.Duration(i+1) * time.Second), Elapsed: time.Second,
			Node: sample.Node{CPU: sample.NodeCPU{User: cum}}}
		out = append(out, s)
	}
	for i := range out {
		perSample(i, &out[i])
	}
	return out
}

func TestBuildRollsUpShortLivedChildren(t *testing.T) {
	t.Parallel()
	meta := sample.Meta{CPUs: 2}
	ss := series([]float64{0.3, 0.3, 0.3, 0.3}, func(i int, s *sample.Sample) {
		switch i {
		case 0:
			s.New = []sample.ProcInfo{{ID: 1, Key: sample.ProcKey{PID: 10}, Cmdline: "poller", Group: "kube-addon-manager", GroupKind: "component"}}
		case 1, 3: // sh -c "kubectl apply" every other second: sh (transient) -> kubectl (transient)
			sh, kc := int64(100+i), int64(200+i)
			s.New = []sample.ProcInfo{
				{ID: sh, ParentID: 1, Key: sample.ProcKey{PID: int(sh)}, Cmdline: "sh -c kubectl apply", BornSeq: i, Group: "other"},
				{ID: kc, ParentID: sh, Key: sample.ProcKey{PID: int(kc)}, Cmdline: "kubectl apply -f /etc/kubernetes/addons", BornSeq: i, Group: "kubectl", GroupKind: "component"},
			}
			s.Procs = []sample.ProcSample{{ID: 1, CPUNs: 10e6}, {ID: sh, CPUNs: 5e6}, {ID: kc, CPUNs: 80e6}}
			s.Exited = []int64{sh, kc}
		default:
			s.Procs = []sample.ProcSample{{ID: 1, CPUNs: 10e6}}
		}
	})
	s := Build(meta, ss, Options{})
	if len(s.Groups) != 1 || s.Groups[0].Name != "kube-addon-manager" {
		t.Fatalf("groups %+v: children must be credited to the spawning group", s.Groups)
	}
	g := s.Groups[0]
	// 4 x 10 ms own + 2 x (5 + 80) ms children over 4 s = 52.5 millicores.
	if math.Abs(g.CPU.Mean-52.5) > 1e-9 || math.Abs(g.ChildrenCPU-42.5) > 1e-9 {
		t.Errorf("group CPU %.3f (children %.3f), want 52.5 (42.5)", g.CPU.Mean, g.ChildrenCPU)
	}
	var kubectl *Children
	for i := range s.Children {
		if s.Children[i].Cmdline == "kubectl apply -f /etc/kubernetes/addons" {
			kubectl = &s.Children[i]
		}
	}
	if kubectl == nil || kubectl.Runs != 2 || kubectl.ParentPID != 10 || math.Abs(kubectl.CPUPerRunMs-80) > 1e-9 || kubectl.PeriodSeconds != 2 {
		t.Errorf("kubectl children %+v", kubectl)
	}
	if len(s.Processes) != 1 || s.Processes[0].PID != 10 {
		t.Errorf("only the poller is a long-lived process: %+v", s.Processes)
	}
	// From the fixture's raw numbers: the node ran 300 ms per second (300m); the one group holds the 52.5m
	// above, tare is absent, so 300 - 52.5 = 247.5m is unattributed.
	r := s.Reconcile
	if math.Abs(r.NodeBusy-300) > 1e-6 || math.Abs(r.Groups-52.5) > 1e-9 || r.Self != 0 || math.Abs(r.Unattributed-247.5) > 1e-6 {
		t.Errorf("reconciliation %+v, want node busy 300m, groups 52.5m, self 0, unattributed 247.5m", r)
	}
}

func TestBuildTooFewSamples(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 1} {
		ss := series(nil, func(int, *sample.Sample) {})[:n]
		s := Build(sample.Meta{}, ss, Options{})
		want := []string{fmt.Sprintf("only %d sample(s): at least two are needed to measure anything; measure for longer than one interval", n)}
		if len(s.Warnings) != 1 || s.Warnings[0].Code != WarnTooFewSamples || s.Warnings[0].Figure != FigureWindow {
			t.Errorf("%d samples: warnings %+v, want one %s on the %s", n, s.Warnings, WarnTooFewSamples, FigureWindow)
		}
		if diff := cmp.Diff(want, warning.Messages(s.Warnings)); diff != "" || s.Window.Intervals != 0 || len(s.Groups) != 0 || s.Node.Busy.N != 0 {
			t.Errorf("%d samples: warnings (-want +got):\n%s\nsummary %+v", n, diff, s)
		}
	}
}

func TestBuildSelfIsApart(t *testing.T) {
	t.Parallel()
	ss := series([]float64{0.1, 0.1}, func(i int, s *sample.Sample) {
		if i == 0 {
			s.New = []sample.ProcInfo{{ID: 1, Self: true, Group: "tare (self)"}, {ID: 2, Group: "other", Cmdline: "x"}}
			return
		}
		s.Procs = []sample.ProcSample{{ID: 1, CPUNs: 20e6}, {ID: 2, CPUNs: 50e6}}
	})
	s := Build(sample.Meta{CPUs: 1}, ss, Options{Match: regexp.MustCompile("nothing")})
	if s.Self == nil || math.Abs(s.Self.CPU.Mean-20) > 1e-9 {
		t.Errorf("self %+v", s.Self)
	}
	if math.Abs(s.Reconcile.Groups-50) > 1e-9 || math.Abs(s.Reconcile.Unattributed-30) > 1e-9 {
		t.Errorf("reconciliation %+v", s.Reconcile)
	}
	if len(s.Groups) != 0 || len(s.Processes) != 0 {
		t.Errorf("filter let through %+v %+v", s.Groups, s.Processes)
	}
}
