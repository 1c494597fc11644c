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

// TestExecTableTakeExeced: TakeExeced names each process that exec'd since the previous call once, with the
// time of its last exec (not its fork's start, which the entry keeps), and forks alone are not execs.
func TestExecTableTakeExeced(t *testing.T) {
	tb := NewExecTable()
	fork := time.Now().Round(0)
	tb.Forked(10, ExecInfo{PPID: 1, Started: fork, At: fork})
	tb.Forked(11, ExecInfo{PPID: 1, Started: fork, At: fork})
	first, second := fork.Add(time.Millisecond), fork.Add(2*time.Millisecond)
	tb.Execed(10, ExecInfo{Cmdline: "runc init", Started: first, At: first})
	tb.Execed(10, ExecInfo{Cmdline: "iperf3 -c server", Started: second, At: second})
	got := tb.TakeExeced()
	if len(got) != 1 || !got[10].Equal(second) {
		t.Errorf("TakeExeced: %v, want pid 10 at its last exec %v only", got, second)
	}
	if e, _ := tb.Lookup(10); !e.Started.Equal(fork) {
		t.Errorf("pid 10 started %v, want its fork's %v", e.Started, fork)
	}
	if again := tb.TakeExeced(); len(again) != 0 {
		t.Errorf("TakeExeced again: %v, want nothing new", again)
	}
}
