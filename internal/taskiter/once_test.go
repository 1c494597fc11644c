package taskiter

import (
	"slices"
	"testing"
)

// A group written twice in one pass keeps its larger CPU reading (exact or not), in the place of its first
// record; groups before from (an earlier pass's, appended to) are left alone, even when they repeat.
func TestOnceEach(t *testing.T) {
	old := Group{TGID: 7, CPUNs: 1}
	gs := []Group{old, {TGID: 7, CPUNs: 50}, {TGID: 9, CPUNs: 10}, {TGID: 7, CPUNs: 5, Inexact: true, Threads: 1}, {TGID: 9, CPUNs: 12, Inexact: true}}
	got, dropped := onceEach(gs, 1, map[int]int{99: 0})
	if dropped != 2 {
		t.Errorf("dropped %d, want 2", dropped)
	}
	want := []Group{old, {TGID: 7, CPUNs: 50}, {TGID: 9, CPUNs: 12, Inexact: true}}
	if !slices.Equal(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}
