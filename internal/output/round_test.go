package output

import "testing"

func TestRound(t *testing.T) {
	for _, c := range []struct {
		x    float64
		d    int
		want float64
	}{{1.25, 1, 1.3}, {-1.25, 1, -1.3}, {-0.04, 1, -0}, {2.345, 2, 2.35}, {-2.345, 2, -2.35}, {7, 0, 7}} {
		if got := Round(c.x, c.d); got != c.want {
			t.Errorf("Round(%g, %d) = %g, want %g", c.x, c.d, got, c.want)
		}
	}
	if Percent(1, 0) != 0 || Percent(1, -1) != 0 || Percent(1, 4) != 25 {
		t.Error("Percent")
	}
}
