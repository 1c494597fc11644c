package experiment

import (
	"slices"
	"strings"
	"testing"

	"github.com/tare-dev/tare/internal/lab"
	"github.com/tare-dev/tare/internal/sample"
)

func TestVariantOfRotates(t *testing.T) {
	for _, tc := range []struct{ labs, variants int }{{4, 2}, {12, 2}, {6, 3}, {12, 4}} {
		// Every round gives each variant an equal share; over V rounds each lab runs every variant once.
		runs := make([]map[int]int, tc.labs)
		for k := range runs {
			runs[k] = map[int]int{}
		}
		for round := 1; round <= tc.variants; round++ {
			share := make([]int, tc.variants)
			for k := range tc.labs {
				v := variantOf(k, round, tc.variants)
				share[v]++
				runs[k][v]++
			}
			for v, n := range share {
				if n != tc.labs/tc.variants {
					t.Errorf("%d labs, %d variants, round %d: variant %d has %d labs", tc.labs, tc.variants, round, v, n)
				}
			}
		}
		for k, m := range runs {
			if len(m) != tc.variants {
				t.Errorf("%d labs, %d variants: lab %d ran %v over %d rounds", tc.labs, tc.variants, k, m, tc.variants)
			}
		}
	}
}

func TestOfLabs(t *testing.T) {
	proc := func(id int64, pid int, parent int64, cmd string) sample.ProcInfo {
		return sample.ProcInfo{ID: id, Key: sample.ProcKey{PID: pid, Start: uint64(pid) * 10}, ParentID: parent, Cmdline: cmd}
	}
	samples := []sample.Sample{{New: []sample.ProcInfo{
		proc(1, 100, 0, "/usr/bin/etcd --data-dir /x/lab/etcd"),
		proc(2, 101, 0, "kube-apiserver --client-ca-file /x/lab-2/pki/ca.crt"),
		proc(3, 102, 0, "kube-scheduler --kubeconfig /x/lab-12/kubeconfigs/s"),
		proc(4, 103, 0, "sh -c burner"), // a run command beside lab-2
		proc(5, 104, 4, "kube-scheduler 0.7"),
		proc(6, 105, 0, "containerd"),
		proc(7, 106, 0, "sh -c other"),       // a run command beside lab-12
		proc(10, 109, 0, "[kube-apiserver]"), // lab's, its command line unread
	}}, {New: []sample.ProcInfo{
		proc(8, 107, 5, "sleep 1"), // a grandchild born later
		proc(9, 108, 2, "kube-apiserver child"),
	}}}
	labs := []lab.Process{{Name: "etcd", PID: 100, StartTicks: 1000}, {Name: "kube-apiserver", PID: 109, StartTicks: 1090}}
	got, err := ofLabs(samples, labs, []string{"/x/lab/", "/x/lab-2/"}, []int{103})
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for id, ok := range got {
		if ok {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	if want := []int64{1, 2, 4, 5, 8, 9, 10}; !slices.Equal(ids, want) {
		t.Errorf("kept %v, want %v (lab-12 is not lab-1's or lab-2's; the run command's tree is; a lab process by PID and start)", ids, want)
	}
	// A lab process the window never saw (another start time: a restart the state does not know).
	_, err = ofLabs(samples, append(labs, lab.Process{Name: "kube-scheduler", PID: 102, StartTicks: 7}), nil, nil)
	if err == nil || !strings.Contains(err.Error(), "kube-scheduler (PID 102)") {
		t.Errorf("err = %v, want the missing kube-scheduler named", err)
	}
}

func TestConcurrentDefaults(t *testing.T) {
	s, err := Parse([]byte("name: x\ntrials: 4\nwindow: 10s\ntarget: {lab: {replicas: 4, concurrent: true, control_plane_only: true}}\nvariants: [{name: a}, {name: b}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !s.concurrent() || !slices.Equal(s.Metrics, concurrentMetrics) || s.guardDeployment() {
		t.Errorf("concurrent %v, metrics %v, guard deployment %v", s.concurrent(), s.Metrics, s.guardDeployment())
	}
}
