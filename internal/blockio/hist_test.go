package blockio

import (
	"encoding/binary"
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestSlotOf(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		d    time.Duration
		want int
	}{
		{-time.Second, 0},
		{0, 0},
		{999 * time.Nanosecond, 0}, // the kernel truncates to whole microseconds
		{time.Microsecond, 1},
		{1999 * time.Nanosecond, 1},
		{2 * time.Microsecond, 2},
		{3 * time.Microsecond, 2},
		{4 * time.Microsecond, 3},
		{47 * time.Microsecond, 6},
		{64 * time.Microsecond, 7},
		{127 * time.Microsecond, 7},
		{128 * time.Microsecond, 8},
		{time.Second, 20},
		{time.Duration(1<<29) * time.Microsecond, 30},
		{time.Duration(1<<30) * time.Microsecond, 31},
		{time.Duration(math.MaxInt64), 31},
	} {
		if got := SlotOf(tc.d); got != tc.want {
			t.Errorf("SlotOf(%v) = %d, want %d", tc.d, got, tc.want)
		}
	}
}

// TestSlotBounds checks that every slot's bounds hold exactly the durations SlotOf puts in it.
func TestSlotBounds(t *testing.T) {
	t.Parallel()
	prevHi := time.Duration(0)
	for i := range Slots {
		lo, hi := SlotBounds(i)
		if lo != prevHi {
			t.Errorf("slot %d starts at %v, the previous one ends at %v", i, lo, prevHi)
		}
		if SlotOf(lo) != i || SlotOf(hi-1) != i {
			t.Errorf("slot %d [%v, %v): SlotOf(lo) = %d, SlotOf(hi-1ns) = %d", i, lo, hi, SlotOf(lo), SlotOf(hi-1))
		}
		if i < Slots-1 && SlotOf(hi) != i+1 {
			t.Errorf("slot %d ends at %v, but SlotOf(%v) = %d", i, hi, hi, SlotOf(hi))
		}
		prevHi = hi
	}
	if _, hi := SlotBounds(Slots - 1); hi != math.MaxInt64 {
		t.Errorf("the last slot ends at %v, want open", hi)
	}
}

func TestQuantile(t *testing.T) {
	t.Parallel()
	us := time.Microsecond
	var h Histogram
	h[6] = 90 // [32, 64) µs
	h[8] = 9  // [128, 256) µs
	h[11] = 1 // [1024, 2048) µs
	for _, tc := range []struct {
		name string
		h    Histogram
		q    float64
		want Quantile
		ok   bool
	}{
		{"empty", Histogram{}, 0.5, Quantile{}, false},
		{"q zero", h, 0, Quantile{}, false},
		{"q above one", h, 1.5, Quantile{}, false},
		{"q NaN", h, math.NaN(), Quantile{}, false},
		// rank 50 of the 90 in [32, 64): (50-0.5)/90 of the way.
		{"p50", h, 0.5, Quantile{Slot: 6, Lo: 32 * us, Hi: 64 * us, Estimate: 32*us + time.Duration(49.5/90*float64(32*us))}, true},
		{"p90 is the last of slot 6", h, 0.9, Quantile{Slot: 6, Lo: 32 * us, Hi: 64 * us, Estimate: 32*us + time.Duration(89.5/90*float64(32*us))}, true},
		{"p91", h, 0.91, Quantile{Slot: 8, Lo: 128 * us, Hi: 256 * us, Estimate: 128*us + time.Duration(0.5/9*float64(128*us))}, true},
		{"p99", h, 0.99, Quantile{Slot: 8, Lo: 128 * us, Hi: 256 * us, Estimate: 128*us + time.Duration(8.5/9*float64(128*us))}, true},
		{"max", h, 1, Quantile{Slot: 11, Lo: 1024 * us, Hi: 2048 * us, Estimate: 1536 * us}, true},
		{"open slot", Histogram{Slots - 1: 3}, 0.5, Quantile{Slot: 31, Lo: time.Duration(1<<30) * us, Hi: math.MaxInt64, Estimate: time.Duration(1<<30) * us}, true},
		{"slot zero", Histogram{0: 1}, 0.5, Quantile{Slot: 0, Lo: 0, Hi: us, Estimate: us / 2}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, ok := tc.h.Quantile(tc.q)
			if ok != tc.ok {
				t.Fatalf("ok = %v, want %v", ok, tc.ok)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Quantile(%v) (-want +got):\n%s", tc.q, diff)
			}
		})
	}
}

func TestQuantileString(t *testing.T) {
	t.Parallel()
	h := Histogram{10: 1}
	q, _ := h.Quantile(0.99)
	if got, want := q.String(), "~768µs in [512µs, 1.024ms)"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	h = Histogram{Slots - 1: 1}
	q, _ = h.Quantile(0.99)
	if got, want := q.String(), "≥17m53.741824s"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

// FuzzQuantile checks on arbitrary histograms that a quantile never panics, lies in its slot, and is the
// nearest-rank one: fewer than ⌈q·n⌉ durations below its slot, at least that many up to its end.
func FuzzQuantile(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3}, 0.5)
	f.Add([]byte{}, 0.99)
	f.Add([]byte{255, 255, 255, 255, 255, 255, 255, 255}, 1.0)
	f.Fuzz(func(t *testing.T, b []byte, q float64) {
		var h Histogram
		for i := 0; i < Slots && len(b) >= 2; i++ {
			h[i] = uint64(binary.LittleEndian.Uint16(b)) // small counts: their sum cannot overflow
			b = b[2:]
		}
		got, ok := h.Quantile(q)
		n := h.Count()
		if !ok {
			if n != 0 && q > 0 && q <= 1 {
				t.Fatalf("Quantile(%v) refused a histogram of %d", q, n)
			}
			return
		}
		if got.Lo > got.Estimate || (got.Hi != math.MaxInt64 && got.Estimate >= got.Hi) {
			t.Fatalf("estimate %v outside [%v, %v)", got.Estimate, got.Lo, got.Hi)
		}
		if lo, hi := SlotBounds(got.Slot); lo != got.Lo || hi != got.Hi || h[got.Slot] == 0 {
			t.Fatalf("quantile %+v: slot bounds [%v, %v), count %d", got, lo, hi, h[got.Slot])
		}
		var below uint64
		for i := range got.Slot {
			below += h[i]
		}
		rank := max(1, min(uint64(math.Ceil(q*float64(n))), n))
		if below >= rank || below+h[got.Slot] < rank {
			t.Fatalf("slot %d holds ranks %d..%d, not %d", got.Slot, below+1, below+h[got.Slot], rank)
		}
	})
}
