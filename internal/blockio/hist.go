package blockio

import (
	"fmt"
	"math"
	"math/bits"
	"time"
)

// Slots is the number of slots of a Histogram; the BPF program's SLOTS.
const Slots = 32

// Histogram counts durations in log2 slots of whole microseconds: slot 0 holds [0, 1) µs, slot i holds
// [2^(i-1), 2^i) µs, and the last slot, from 2^30 µs (about 18 minutes), is open ended. The kernel truncates
// each duration to whole microseconds before choosing its slot, so the bounds are exact.
type Histogram [Slots]uint64

// SlotOf returns the slot a duration falls in, as the kernel chooses it.
func SlotOf(d time.Duration) int {
	us := uint64(max(d, 0) / time.Microsecond)
	if us == 0 {
		return 0
	}
	return min(bits.Len64(us), Slots-1)
}

// SlotBounds returns the bounds [lo, hi) of slot i; hi is math.MaxInt64 for the last, open slot.
func SlotBounds(i int) (lo, hi time.Duration) {
	switch {
	case i <= 0:
		return 0, time.Microsecond
	case i >= Slots-1:
		return time.Duration(1<<(Slots-2)) * time.Microsecond, math.MaxInt64
	}
	return time.Duration(1<<(i-1)) * time.Microsecond, time.Duration(1<<i) * time.Microsecond
}

// Count returns the number of durations in h.
func (h *Histogram) Count() uint64 {
	var n uint64
	for _, c := range h {
		n += c
	}
	return n
}

// Add adds o's counts to h.
func (h *Histogram) Add(o *Histogram) {
	for i := range h {
		h[i] += o[i]
	}
}

// sub subtracts o's counts from h; a slot that would go negative (o is not an earlier reading of h) becomes 0.
func (h *Histogram) sub(o *Histogram) {
	for i := range h {
		h[i] -= min(h[i], o[i])
	}
}

// Quantile is a quantile of a Histogram: the slot it falls in, with that slot's bounds, and an estimate
// within them. The true value lies in [Lo, Hi); Estimate interpolates linearly inside the slot, assuming
// its durations are spread evenly, and is only as good as that assumption.
type Quantile struct {
	Slot     int
	Lo, Hi   time.Duration // Hi is math.MaxInt64 for the last, open slot
	Estimate time.Duration
}

// String says the quantile with its bounds: "~700µs in [512µs, 1.024ms)".
func (q Quantile) String() string {
	if q.Hi == math.MaxInt64 {
		return fmt.Sprintf("≥%v", q.Lo)
	}
	return fmt.Sprintf("~%v in [%v, %v)", q.Estimate, q.Lo, q.Hi)
}

// Quantile returns the q-quantile (0 < q ≤ 1; 0.99 for p99) of h by nearest rank: the slot holding the
// ⌈q·n⌉-th smallest duration. ok is false when h is empty or q is out of range.
func (h *Histogram) Quantile(q float64) (Quantile, bool) {
	n := h.Count()
	if n == 0 || !(q > 0 && q <= 1) {
		return Quantile{}, false
	}
	rank := uint64(math.Ceil(q * float64(n)))
	rank = max(1, min(rank, n))
	var below uint64
	for i, c := range h {
		if c == 0 || below+c < rank {
			below += c
			continue
		}
		lo, hi := SlotBounds(i)
		est := lo
		if hi != math.MaxInt64 {
			// The rank-th duration is the (rank-below)-th of c spread evenly over [lo, hi).
			frac := (float64(rank-below) - 0.5) / float64(c)
			est = lo + time.Duration(frac*float64(hi-lo))
		}
		return Quantile{Slot: i, Lo: lo, Hi: hi, Estimate: est}, true
	}
	return Quantile{}, false // unreachable: the counts sum to n ≥ rank
}
