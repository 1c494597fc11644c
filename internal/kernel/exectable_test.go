package kernel

import (
	"testing"
	"time"
)

// TestExecTableForget: Forget drops the entries last written longer ago than the age, by the table's own
// clock (a wall clock stepped back in the At the watchers set changes nothing), keeps one written again
// since (an exec after its fork) with its fork's start, and gives the spent updates back.
func TestExecTableForget(t *testing.T) {
	tb := NewExecTable()
	clock := time.Now()
	tb.now = func() time.Time { return clock }
	wall := time.Now().Round(0)
	for pid := 100; pid < 2100; pid++ {
		tb.Forked(pid, ExecInfo{PPID: 1, Started: wall, At: wall})
	}
	clock = clock.Add(time.Minute)
	stepped := wall.Add(-time.Hour) // the wall clock stepped back an hour
	tb.Execed(150, ExecInfo{Cmdline: "sleep 1", At: stepped})
	tb.Forked(3000, ExecInfo{PPID: 1, At: stepped})
	clock = clock.Add(90 * time.Second)
	tb.Forget(2 * time.Minute)
	for _, pid := range []int{100, 149, 2099} {
		if _, ok := tb.Lookup(pid); ok {
			t.Errorf("pid %d, written 2.5 minutes ago, kept", pid)
		}
	}
	if e, ok := tb.Lookup(150); !ok || e.Cmdline != "sleep 1" || !e.Started.Equal(wall) {
		t.Errorf("pid 150, exec'd 1.5 minutes ago: %+v, %v; want kept with its fork's start", e, ok)
	}
	if _, ok := tb.Lookup(3000); !ok {
		t.Error("pid 3000, forked 1.5 minutes ago, dropped")
	}
	if len(tb.byPID) != 2 || len(tb.order)-tb.head != 2 || cap(tb.order) > 1024 {
		t.Errorf("after Forget: %d entries, %d pending updates (capacity %d); want 2, 2 and the burst's capacity given back",
			len(tb.byPID), len(tb.order)-tb.head, cap(tb.order))
	}
	clock = clock.Add(time.Minute)
	tb.Forget(2 * time.Minute)
	if len(tb.byPID) != 0 || len(tb.order) != 0 {
		t.Errorf("3.5 minutes on: %d entries and %d updates left", len(tb.byPID), len(tb.order))
	}
}
