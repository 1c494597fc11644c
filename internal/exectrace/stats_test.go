package exectrace

import (
	"errors"
	"os/exec"
	"testing"
	"time"

	"github.com/tare-dev/tare/internal/bpfstats"
	"github.com/tare-dev/tare/internal/testenv"
)

// TestStatsCountExecs: with run-time statistics on, a storm of n known process starts (fork and exec of
// /bin/true) moves the exec program's run count by at least n and the fork program's by at least n (other
// processes of the machine add to both), each run takes a plausible time, and the time tare reports as its
// in-kernel cost is the sum of the programs' deltas.
func TestStatsCountExecs(t *testing.T) {
	if testing.Short() {
		t.Skip("measures the kernel's run time of BPF programs")
	}
	tr, _ := open(t, Options{})
	c, err := bpfstats.Enable()
	if errors.Is(err, bpfstats.ErrNotSupported) {
		testenv.Unavailable(t, "%v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	before, err := bpfstats.Read(tr.Programs())
	if err != nil {
		t.Fatal(err)
	}
	const n = 100
	for range n {
		if err := exec.Command("/bin/true").Run(); err != nil {
			t.Fatal(err)
		}
	}
	after, err := bpfstats.Read(tr.Programs())
	if err != nil {
		t.Fatal(err)
	}
	d := bpfstats.Delta(before, after)
	var sum time.Duration
	for _, s := range d {
		sum += s.RunTime
		per := time.Duration(0)
		if s.RunCount > 0 {
			per = s.RunTime / time.Duration(s.RunCount)
		}
		t.Logf("%s: %d runs, %v, %v a run", s.Name, s.RunCount, s.RunTime, per)
		if s.RunCount < n {
			t.Errorf("%s ran %d times for %d process starts", s.Name, s.RunCount, n)
		}
		// A run copies at most 1 KiB into the ring buffer: well under a microsecond to a few; 1 ms a run
		// would mean the statistics measure something else (the run count or time not ours).
		if s.RunTime <= 0 || per > time.Millisecond {
			t.Errorf("%s: %v over %d runs: outside (0, 1 ms] a run", s.Name, s.RunTime, s.RunCount)
		}
		if s.InSelf {
			t.Errorf("%s marked as running in tare", s.Name)
		}
	}
	if got := bpfstats.Outside(d); got != sum {
		t.Errorf("Outside = %v, want the sum of the deltas %v", got, sum)
	}
}
