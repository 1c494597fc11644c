package sample

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/tare-dev/tare/internal/bpfstats"
	"github.com/tare-dev/tare/internal/testenv"
)

// TestSelfBPFCountsExecs: between two samples of a sampler on the exec tracepoints, n known process starts
// move the exec program's run count in Sample.SelfBPF by at least n, with some run time, and the time the
// samples report outside tare is the sum of the programs' deltas.
func TestSelfBPFCountsExecs(t *testing.T) {
	if testing.Short() {
		t.Skip("measures the kernel's run time of BPF programs")
	}
	testenv.NeedRoot(t, "BPF run-time statistics need CAP_SYS_ADMIN")
	s, err := New(context.Background(), Options{Interval: time.Second, Detail: time.Second, ExecSource: ExecTracepoints}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, l := range s.Meta().Limitations {
		if strings.Contains(l, "BPF time is not measured") {
			testenv.Unavailable(t, "%s", l)
		}
	}
	first, err := s.Sample()
	if err != nil {
		t.Fatal(err)
	}
	const n = 50
	for range n {
		if err := exec.Command("true").Run(); err != nil {
			t.Fatal(err)
		}
	}
	last, err := s.Sample()
	if err != nil {
		t.Fatal(err)
	}
	d := bpfstats.Delta(first.SelfBPF, last.SelfBPF)
	var sum time.Duration
	found := false
	for _, p := range d {
		t.Logf("%s: %d runs, %v (in self %v)", p.Name, p.RunCount, p.RunTime, p.InSelf)
		if !p.InSelf {
			sum += p.RunTime
		}
		if p.Name == "exectrace/process_exec" {
			found = true
			if p.RunCount < n || p.RunTime <= 0 {
				t.Errorf("%s: %d runs in %v for %d execs", p.Name, p.RunCount, p.RunTime, n)
			}
		}
	}
	if !found {
		t.Fatalf("no exec program in %v (exit source %s)", last.SelfBPF, s.Meta().ExitSource)
	}
	if got := bpfstats.Outside(d); got != sum {
		t.Errorf("Outside = %v, want %v", got, sum)
	}
}
