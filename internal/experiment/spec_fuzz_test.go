package experiment

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// FuzzParse feeds the spec parser YAML seeded with the ready-made specs in examples/experiments. A spec
// it accepts must satisfy what the runner relies on, and must survive the trip through the experiment
// file: the store keeps the spec as JSON and checks it again on --resume, so what Parse accepts,
// json.Marshal then the store's decoding must give back unchanged.
func FuzzParse(f *testing.F) {
	paths, err := filepath.Glob("../../examples/experiments/*.yaml")
	if err != nil || len(paths) == 0 {
		f.Fatalf("no example specs: %v", err)
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("name: any\ntarget: {commands: {apply: 'kubectl apply -f $TARE_VARIANT.yaml', wait: 'sleep 5'}}\n" +
		"trials: 4\nwindow: 30s\nguard: {tolerance: 10%, deployment: false}\n" +
		"variants: [{name: one, scale: [kube-system/coredns=1]}, {name: two, scale: [kube-system/coredns=2]}]\n"))
	f.Add([]byte("name: ds\ntrials: 3\nwindow: 20s\nprimary: daemonset-node-cpu\nmetrics: [node-busy, daemonset]\n" +
		"variants: [{name: none}, {name: agent, manifests: [a.yaml, b/c.yaml]}]\n"))
	f.Add([]byte("name: helm\ntrials: 2\nwindow: 10s\n" +
		"variants: [{name: none}, {name: agent, helm: {chart: deploy/helm/tare-agent, release: tare, values: {port: 9847, a: [1, x, {b: null}]}}}]\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := Parse(b)
		if err != nil {
			return
		}
		baselines := 0
		for _, v := range s.Variants {
			if v.Baseline {
				baselines++
			}
		}
		if len(s.Variants) < 2 || baselines != 1 || s.Trials < 2 || s.Window.Duration <= 0 ||
			s.Interval.Duration <= 0 || s.Interval.Duration > s.Window.Duration || !(s.Alpha > 0 && s.Alpha < 0.5) {
			t.Fatalf("accepted a spec the runner cannot use: %+v", s)
		}
		for _, v := range s.Variants {
			if v.installs() && (s.Target.Lab == nil || s.Target.Lab.ControlPlaneOnly || v.Pause) {
				t.Fatalf("accepted manifests where no DaemonSet pod can run: %+v", s)
			}
		}
		stored, err := json.Marshal(s)
		if err != nil {
			t.Fatalf("accepted a spec the experiment file cannot hold: %v", err)
		}
		back := &Spec{}
		if err := json.Unmarshal(stored, back); err != nil {
			t.Fatalf("decoding the stored spec %s: %v", stored, err)
		}
		if err := back.check(); err != nil {
			t.Fatalf("the stored spec %s no longer checks: %v", stored, err)
		}
		if diff := cmp.Diff(s, back, cmpopts.IgnoreUnexported(Spec{}), cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("the stored spec differs (-parsed +stored):\n%s", diff)
		}
	})
}
