package testload

import (
	"testing"
	"time"
)

// TestBounds: the range the polls prove holds the interpolated figure, is exact when the window's ends
// fall on polls, and widens over a gap in the polls at a window's end.
func TestBounds(t *testing.T) {
	t0 := time.Unix(1000, 0)
	tr := NewPointTrace()
	// A counter that runs at 1 CPU, then 2 CPUs from 40 ms on; no poll between 30 and 70 ms.
	for _, p := range []struct {
		ms    int
		usage time.Duration
	}{{0, 0}, {10, 10}, {20, 20}, {30, 30}, {70, 90}, {80, 110}, {90, 130}} {
		tr.Record(t0.Add(time.Duration(p.ms)*time.Millisecond), p.usage*time.Millisecond)
	}
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

	lo, hi, ok := tr.Bounds(at(10), at(30))
	if !ok || lo != 1000 || hi != 1000 {
		t.Errorf("polls on both ends: [%v, %v] %v, want exactly 1000m", lo, hi, ok)
	}
	lo, hi, ok = tr.Bounds(at(15), at(50))
	mid, _ := tr.Between(at(15), at(50))
	// At least 20→30 (10 ms of CPU), at most 10→70 (80 ms), over 35 ms.
	if !ok || lo > mid || mid > hi || int(lo) != 285 || int(hi) != 2285 {
		t.Errorf("a gap at the end: [%v, %v] around %v (%v), want [285, 2285]", lo, hi, mid, ok)
	}
	if _, _, ok := tr.Bounds(at(-5), at(20)); ok {
		t.Error("a window starting before the first poll is not covered")
	}
	if _, _, ok := tr.Bounds(at(20), at(95)); ok {
		t.Error("a window ending after the last poll is not covered")
	}
	if _, _, ok := tr.Bounds(at(20), at(20)); ok {
		t.Error("an empty window is not covered")
	}
}
