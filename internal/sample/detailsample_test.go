package sample

import (
	"testing"
	"time"
)

// TestDetailSample: detail samples come every Detail/Interval samples from the baseline, every sample when
// Detail is not longer than Interval.
func TestDetailSample(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		interval, detail time.Duration
		want             []int
	}{
		{time.Second, 5 * time.Second, []int{0, 5, 10}},
		{time.Second, time.Second, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10}},
		{time.Second, 0, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10}},
		{250 * time.Millisecond, time.Second, []int{0, 4, 8}},
	} {
		m := Meta{Interval: c.interval, Detail: c.detail}
		var got []int
		for seq := range 11 {
			if m.DetailSample(seq) {
				got = append(got, seq)
			}
		}
		if len(got) != len(c.want) {
			t.Errorf("interval %v, detail %v: detail samples %v, want %v", c.interval, c.detail, got, c.want)
			continue
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("interval %v, detail %v: detail samples %v, want %v", c.interval, c.detail, got, c.want)
				break
			}
		}
	}
}
