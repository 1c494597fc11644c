package datapath

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// closeFloats compares floats to 1e-12: a ratio goes through logarithms and back.
var closeFloats = cmp.Comparer(func(a, b float64) bool { return math.Abs(a-b) <= 1e-12*math.Max(1, math.Abs(a)) })

// TestShiftOf compares two samples worked out by hand: base {1, 2, 4} and {3, 6, 12}. The nine pairwise
// ratios are 0.75, 1.5, 1.5, 3, 3, 3, 6, 6, 12, whose median (Hodges–Lehmann) is 3; every value of the
// second sample but 3 < 4 lies above every one of the base, U = 8 of 9, and of the C(6,3) = 20 orders
// of three against three two give U ≥ 8: one-sided 0.1, two-sided p = 0.2, which is also the smallest
// one-sided p these sizes allow times two (MinP 0.1). Values that are not positive and finite are left out.
func TestShiftOf(t *testing.T) {
	t.Parallel()
	s, ok := ShiftOf([]float64{1, 0, 2, math.NaN(), 4}, []float64{3, 6, -1, 12, math.Inf(1)})
	if !ok {
		t.Fatal("no shift")
	}
	want := Shift{N: 3, NBase: 3, Median: 6, Base: 2, Ratio: 3, P: 0.2, MinP: 0.1}
	got := s
	got.Lo, got.Hi, got.Level = 0, 0, 0
	if diff := cmp.Diff(want, got, closeFloats); diff != "" {
		t.Errorf("shift (-want +got):\n%s", diff)
	}
	if s.Significant || s.Lo > 3 || s.Hi < 3 || s.Lo <= 0 {
		t.Errorf("interval [%g, %g] around 3, significant %v", s.Lo, s.Hi, s.Significant)
	}
	if _, ok := ShiftOf([]float64{0, -1}, []float64{1}); ok {
		t.Error("a shift against a baseline without a positive value")
	}
}

// TestShifts: a figure neither side has a value of is left out; the others come in the figures' order.
func TestShifts(t *testing.T) {
	t.Parallel()
	type trial struct{ a, b float64 }
	figs := []Figure[trial]{
		{Name: "a", Value: func(x trial) float64 { return x.a }},
		{Name: "b", Value: func(x trial) float64 { return x.b }},
	}
	base := []trial{{1, 0}, {2, 0}}
	ts := []trial{{4, 1}, {8, 1}}
	var got []string
	for f, s := range Shifts(figs, base, ts) {
		got = append(got, f.Name)
		if math.Abs(s.Ratio-4) > 1e-12 {
			t.Errorf("%s: ratio %g, want 4", f.Name, s.Ratio)
		}
	}
	if !cmp.Equal(got, []string{"a"}) {
		t.Errorf("figures %v, want [a]", got)
	}
}

// TestLaneTrials: the trials key keeps are grouped, their keys in the order first seen.
func TestLaneTrials(t *testing.T) {
	t.Parallel()
	order, by := LaneTrials([]int{3, 1, 4, 1, 5, 9, 2, 6}, func(x int) (int, bool) { return x % 3, x != 9 })
	if !cmp.Equal(order, []int{0, 1, 2}) {
		t.Errorf("order %v", order)
	}
	want := map[int][]int{0: {3, 6}, 1: {1, 4, 1}, 2: {5, 2}}
	if diff := cmp.Diff(want, by); diff != "" {
		t.Errorf("groups (-want +got):\n%s", diff)
	}
}
