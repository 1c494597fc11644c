package taskiter_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/tare-dev/tare/internal/kernel"
	"github.com/tare-dev/tare/internal/taskiter"
)

// TestTotalsAgainstTaskstats compares the iterator's thread-group totals with taskstats' for every process
// that did not run between two passes (so both read the same still counters). They agree exactly unless
// threads of the process have exited: taskstats counts a dead thread's time as of its exit notification,
// the iterator (like CLOCK_PROCESS_CPUTIME_ID) as of its release, a little later. That is why the sampler
// uses the iterator to tell which processes ran and still reads their CPU from its usual sources.
func TestTotalsAgainstTaskstats(t *testing.T) { eachPass(t, testTotalsAgainstTaskstats) }

func testTotalsAgainstTaskstats(t *testing.T, it *taskiter.Iter) {
	ts, err := kernel.OpenTaskstats()
	if errors.Is(err, kernel.ErrNotSupported) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ts.Close() }()
	first := complete(t, it.All)
	time.Sleep(100 * time.Millisecond)
	moved := complete(t, it.Changed)
	ran := byTGID(moved)
	var equal, above int
	below := map[int]string{}
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
			below[g.TGID] = fmt.Sprintf("pid %d: iterator %d ns below taskstats %d ns", g.TGID, g.CPUNs, st.CPUNs)
		}
	}
	// A process that ran after the second pass, before its query, is below: the next pass reports it.
	later := byTGID(complete(t, it.Changed))
	for pid, msg := range below {
		if _, ok := later[pid]; ok {
			t.Logf("%s, but it ran since", msg)
			delete(below, pid)
			continue
		}
		t.Error(msg)
	}
	t.Logf("idle processes: %d equal, %d above taskstats (threads exited), %d below", equal, above, len(below))
	if equal == 0 {
		t.Error("no idle process where both agree exactly")
	}
}
