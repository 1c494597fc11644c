package sample

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/tare-dev/tare/internal/testenv"
	"github.com/tare-dev/tare/internal/testload"
)

// TestOldTaskstatsThreadExits runs the path of kernels before 5.19, whose taskstats exit records carry no
// ac_tgid, on this kernel: the sampler's exit listener reads every real record as version 11. A process
// that spends its CPU on threads living a few milliseconds each (every thread's exit is a lone record the
// kernel does not say is a thread's) must be credited with what its cgroup says it used, and no thread
// may come out as a short-lived child of the test (its ac_ppid): that would count its CPU twice. The
// short-lived shells the test runs meanwhile, real processes, must each still be booked as one.
// The same runs with the records as they come, for comparison.
func TestOldTaskstatsThreadExits(t *testing.T) {
	if testing.Short() {
		t.Skip("samples for three seconds")
	}
	testenv.NeedRoot(t, "taskstats exit notifications need root")
	for _, v := range []uint16{11, 0} {
		t.Run(fmt.Sprintf("version=%d", v), func(t *testing.T) { testThreadExitsAsVersion(t, v) })
	}
}

func testThreadExitsAsVersion(t *testing.T, version uint16) {
	pid, _ := testload.Start(t, "churn", "300")
	usage := testload.CPUCgroup(t, fmt.Sprintf("tare-oldtaskstats-v%d-%d", version, os.Getpid()), pid)
	s, err := New(context.Background(), Options{Interval: 250 * time.Millisecond, Detail: time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.exits == nil || s.execs == nil {
		testenv.Unavailable(t, "no taskstats exit notifications or no exec source: %v", s.Meta().Limitations)
	}
	s.exits.ReadAsVersion(version)
	if _, err := s.Sample(); err != nil {
		t.Fatal(err)
	}
	st, ok := s.procs[pid]
	if !ok {
		t.Fatalf("helper %d unknown to the sampler", pid)
	}
	cg0 := usage()
	if _, err := s.Sample(); err != nil {
		t.Fatal(err)
	}
	var credited, phantomNs uint64
	phantoms, shells, booked := 0, 0, 0
	var cg1 time.Duration
	for start := time.Now(); time.Since(start) < 3*time.Second; {
		time.Sleep(200 * time.Millisecond)
		if err := exec.Command("sh", "-c", "i=0; while [ $i -lt 3000 ]; do i=$((i+1)); done").Run(); err != nil {
			t.Fatal(err)
		}
		shells++
		take := s.Sample
		if time.Since(start) >= 3*time.Second {
			take = s.SampleFinal
			cg1 = usage()
		}
		smp, err := take()
		if err != nil {
			t.Fatal(err)
		}
		born := map[int64]bool{}
		for _, n := range smp.New {
			switch {
			case n.PPID != os.Getpid() || n.ExitSeq == 0:
			case n.Comm == "sh":
				booked++
			default:
				born[n.ID] = true
				phantoms++
			}
		}
		for _, p := range smp.Procs {
			if p.ID == st.info.ID {
				credited += p.CPUNs
			}
			if born[p.ID] {
				phantomNs += p.CPUNs
			}
		}
	}
	truth := cg1 - cg0
	rel := math.Abs(float64(credited)-float64(truth)) / float64(truth)
	t.Logf("churn 300m, records read as version %d (0: as they come): credited %v, its cgroup %v (%.2f%% off); %d records without a TGID, %d short-lived children of the test (%v) besides %d of %d shells",
		version, time.Duration(credited), truth, rel*100, s.exits.Unsure, phantoms, time.Duration(phantomNs), booked, shells)
	if version != 0 && s.exits.Unsure == 0 {
		t.Fatal("no exit record came without a TGID: the old path was not exercised")
	}
	if booked != shells {
		t.Errorf("%d short-lived shells of the test booked, %d ran", booked, shells)
	}
	if phantoms > 0 {
		t.Errorf("%d threads of the helper booked as short-lived children of the test, %v counted twice", phantoms, time.Duration(phantomNs))
	}
	// Read as they come, the records give 1-2% on this busy machine (four test suites at once); a thread's
	// CPU counted twice would be some 100% over.
	if rel > 0.05 {
		t.Errorf("credited %v, its cgroup used %v: %.1f%% off, allowed 5%%", time.Duration(credited), truth, rel*100)
	}
}
