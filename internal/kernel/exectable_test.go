package kernel

import (
	"testing"
	"time"
)

// TestExecTableForget: Forget drops the entries whose last update is older than the age, keeps one updated
// since (an exec after its fork), and does not keep the spent updates once most of them expired.
func TestExecTableForget(t *testing.T) {
	tb := NewExecTable()
	old := time.Now().Add(-3 * time.Minute)
	for pid := 100; pid < 200; pid++ {
		tb.Forked(pid, ExecInfo{PPID: 1, Started: old, At: old})
	}
	tb.Execed(150, ExecInfo{Cmdline: "sleep 1", At: time.Now()})
	tb.Forked(300, ExecInfo{PPID: 1, At: time.Now()})
	tb.Forget(2 * time.Minute)
	for _, pid := range []int{100, 149, 199} {
		if _, ok := tb.Lookup(pid); ok {
			t.Errorf("pid %d, last updated 3 minutes ago, kept", pid)
		}
	}
	if e, ok := tb.Lookup(150); !ok || e.Cmdline != "sleep 1" || !e.Started.Equal(old) {
		t.Errorf("pid 150, exec'd just now: %+v, %v; want kept with its fork's start", e, ok)
	}
	if _, ok := tb.Lookup(300); !ok {
		t.Error("pid 300, forked just now, dropped")
	}
	if len(tb.byPID) != 2 || len(tb.order)-tb.head != 2 {
		t.Errorf("after Forget: %d entries and %d pending updates, want 2 and 2", len(tb.byPID), len(tb.order)-tb.head)
	}
	tb.Forget(0)
	if len(tb.byPID) != 0 || len(tb.order) != 0 {
		t.Errorf("Forget(0): %d entries and %d updates left", len(tb.byPID), len(tb.order))
	}
}
