package taskiter_test

import (
	"errors"
	"testing"
	"time"

	"github.com/tare-dev/tare/internal/kernel"
)

// TestTotalsAgainstTaskstats compares the iterator's thread-group totals with taskstats' for every process
// that did not run between two passes (so both read the same still counters). They agree exactly unless
// threads of the process have exited: taskstats counts a dead thread's time as of its exit notification,
// the iterator (like CLOCK_PROCESS_CPUTIME_ID) as of its release, a little later. That is why the sampler
// uses the iterator to tell which processes ran and still reads their CPU from its usual sources.
func TestTotalsAgainstTaskstats(t *testing.T) {
	it := openIter(t)
	ts, err := kernel.OpenTaskstats()
	if errors.Is(err, kernel.ErrNotSupported) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ts.Close() }()
	first, err := it.All(nil)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	moved, err := it.Changed(nil)
	if err != nil {
		t.Fatal(err)
	}
	ran := byTGID(moved)
	var equal, above, below int
	for _, g := range first {
		if _, ok := ran[g.TGID]; ok || g.Kernel {
			continue
		}
		st, err := ts.TGID(g.TGID)
		if err != nil {
			continue // exited
		}
		switch {
		case st.CPUNs == g.CPUNs:
			equal++
		case g.CPUNs > st.CPUNs:
			above++
			t.Logf("pid %d (%d threads): iterator %d ns, taskstats %d ns (+%d ns)", g.TGID, g.Threads, g.CPUNs, st.CPUNs, g.CPUNs-st.CPUNs)
		default:
			below++
			t.Errorf("pid %d: iterator %d ns below taskstats %d ns", g.TGID, g.CPUNs, st.CPUNs)
		}
	}
	t.Logf("idle processes: %d equal, %d above taskstats (threads exited), %d below", equal, above, below)
	if equal == 0 {
		t.Error("no idle process where both agree exactly")
	}
}
