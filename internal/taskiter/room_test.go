package taskiter_test

import (
	"errors"
	"testing"
	"time"

	"github.com/tare-dev/tare/internal/taskiter"
	"github.com/tare-dev/tare/internal/testenv"
	"github.com/tare-dev/tare/internal/testload"
)

// TestOpenCodedRoom: the open-coded pass with room for 16 records a pass, on a machine with more
// processes than that. A pass that runs out of room says it is incomplete and reports exactly as many
// groups as it had room for; the groups left out come in the next passes, so passes in a row report every
// process, each sleeper started here among them (ground truth: their PIDs from fork), and the first pass
// with room to spare is complete.
func TestOpenCodedRoom(t *testing.T) {
	testenv.NeedRoot(t, "loading a BPF program needs CAP_BPF and CAP_PERFMON")
	const room = 16
	it, err := taskiter.OpenCodedWithRoom(room)
	if errors.Is(err, taskiter.ErrNotSupported) {
		// The open-coded pass needs Linux 6.7: an older kernel (make kernel-check's 6.1) has none to test.
		t.Skipf("no open-coded pass on this kernel: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = it.Close() })
	sleepers := testload.Sleepers(t, 5*room)
	time.Sleep(300 * time.Millisecond) // let them reach their sleep
	seen := map[int]bool{}
	passes := 0
	for ; ; passes++ {
		if passes == 200 {
			t.Fatalf("still incomplete after %d passes", passes)
		}
		gs, err := it.Changed(nil)
		for _, g := range gs {
			seen[g.TGID] = true
		}
		if err == nil {
			if len(gs) >= room {
				t.Errorf("a complete pass reported %d groups, the whole room of %d", len(gs), room)
			}
			break
		}
		if !errors.Is(err, taskiter.ErrIncomplete) {
			t.Fatal(err)
		}
		if len(gs) != room {
			t.Fatalf("pass %d: %d groups with %v, want the room's %d", passes, len(gs), err, room)
		}
	}
	for _, pid := range sleepers {
		if !seen[pid] {
			t.Errorf("sleeper %d never reported in %d passes", pid, passes+1)
		}
	}
	t.Logf("%d groups over %d passes of %d records", len(seen), passes+1, room)
}
