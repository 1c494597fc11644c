package experiment

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/tare-dev/tare/internal/compare"
	"github.com/tare-dev/tare/internal/lab"
	"github.com/tare-dev/tare/internal/sample"
	"github.com/tare-dev/tare/internal/stats"
)

// Every round deals each variant an equal share, the same for the same seed and round (--resume), other
// deals in other rounds; over many rounds each lab runs every variant about equally often, and the labs
// running a variant in one round are no guide to the next (no fixed rotation).
func TestDealLabs(t *testing.T) {
	for _, tc := range []struct {
		labs, variants int
		seed           uint64
	}{{4, 2, 0}, {4, 2, 42}, {16, 2, 1}, {6, 3, 7}, {12, 4, 1 << 40}} {
		const rounds = 400
		runs := make([][]int, tc.labs)
		for k := range runs {
			runs[k] = make([]int, tc.variants)
		}
		same := 0
		var prev []int
		for round := 1; round <= rounds; round++ {
			deal := dealLabs(tc.seed, round, tc.labs, tc.variants)
			if !slices.Equal(deal, dealLabs(tc.seed, round, tc.labs, tc.variants)) {
				t.Fatalf("%d labs, %d variants, round %d: two deals differ", tc.labs, tc.variants, round)
			}
			share := make([]int, tc.variants)
			for k, v := range deal {
				share[v]++
				runs[k][v]++
			}
			for v, n := range share {
				if n != tc.labs/tc.variants {
					t.Errorf("%d labs, %d variants, round %d: variant %d has %d labs", tc.labs, tc.variants, round, v, n)
				}
			}
			if slices.Equal(deal, prev) {
				same++
			}
			prev = deal
		}
		// Each lab runs a variant in about 1/v of the rounds: binomial, within 5 standard deviations.
		p := 1 / float64(tc.variants)
		sd := math.Sqrt(rounds * p * (1 - p))
		for k, r := range runs {
			for v, n := range r {
				if math.Abs(float64(n)-rounds*p) > 5*sd {
					t.Errorf("%d labs, %d variants: lab %d ran variant %d in %d of %d rounds", tc.labs, tc.variants, k, v, n, rounds)
				}
			}
		}
		// A deal repeats the one before with chance 1/6 for 4 labs and 2 variants, less with more labs.
		if same > rounds/4 {
			t.Errorf("%d labs, %d variants: %d rounds dealt as the one before", tc.labs, tc.variants, same)
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
		{ID: 11, Key: sample.ProcKey{PID: 103, Start: 5000}, Cmdline: "unrelated"}, // the run shell's PID, reused
	}}}
	labs := []lab.Process{{Name: "etcd", PID: 100, StartTicks: 1000}, {Name: "kube-apiserver", PID: 109, StartTicks: 1090}}
	got, err := ofLabs(samples, labs, []string{"/x/lab/", "/x/lab-2/"}, []sample.ProcKey{{PID: 103, Start: 1030}})
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
		t.Errorf("kept %v, want %v (lab-12 is not lab-1's or lab-2's; the run command's tree is, not its PID reused; a lab process by PID and start)", ids, want)
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

// TestPlanDFDealt: the plan's degrees of freedom for the lab-level estimate are those the estimate has on
// labs dealt as a concurrent experiment deals them (where the effect is identified: some lab ran both):
// exactly with two variants, on average (within one, over many seeds) with three and four.
func TestPlanDFDealt(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ shares, labs int }{{2, 2}, {2, 8}, {3, 2}, {3, 4}, {4, 4}} {
		p := compare.Plan{Labs: c.labs, Shares: c.shares}
		for n := 2; n <= 8; n++ {
			const seeds = 300
			sum, ok, lo, hi := 0, 0, math.MaxInt, 0
			for seed := range uint64(seeds) {
				var obs []stats.LabObs
				for r := 1; r <= n; r++ {
					for k, v := range dealLabs(seed, r, c.labs*c.shares, c.shares) {
						if v < 2 { // the baseline (0) and the first variant (1)
							obs = append(obs, stats.LabObs{Lab: k, Round: r, Treated: v == 1, Y: float64(k*r%7) + float64(v)})
						}
					}
				}
				e := stats.LabEffect(obs)
				if math.IsNaN(e.Mean) {
					continue // no lab switched between the two: nothing to estimate, whatever the df
				}
				sum, ok = sum+e.DF, ok+1
				lo, hi = min(lo, e.DF), max(hi, e.DF)
			}
			if ok == 0 {
				t.Fatalf("%d labs a share, %d variants, %d rounds: no seed identified the effect", c.labs, c.shares, n)
			}
			mean := float64(sum) / float64(ok)
			t.Logf("%d labs a share, %d variants, %d rounds: df %.2f on average (%d-%d, %d of %d identified), the plan's %d", c.labs, c.shares, n, mean, lo, hi, ok, seeds, p.DF(n))
			if c.shares == 2 && (lo != p.DF(n) || hi != p.DF(n)) {
				t.Errorf("%d labs a share, 2 variants, %d rounds: the estimate's df %d-%d, the plan's %d", c.labs, n, lo, hi, p.DF(n))
			}
			if math.Abs(mean-float64(p.DF(n))) > 1 {
				t.Errorf("%d labs a share, %d variants, %d rounds: the estimate's df %.2f on average, the plan's %d", c.labs, c.shares, n, mean, p.DF(n))
			}
		}
	}
}
