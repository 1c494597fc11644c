package density

import (
	"math"
	"testing"
	"time"
)

func TestParseRate(t *testing.T) {
	for in, want := range map[string]float64{"2": 2, "0.5/s": 0.5, "30/min": 0.5, " 1.5 ": 1.5} {
		if got, err := ParseRate(in); err != nil || math.Abs(got-want) > 1e-12 {
			t.Errorf("ParseRate(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "0", "-1", "11", "700/min", "fast", "2/h"} {
		if _, err := ParseRate(bad); err == nil {
			t.Errorf("ParseRate(%q) accepted", bad)
		}
	}
}

// Three trials whose churning window costs the kubelet 40, 45 and 50 millicores more at 1, 1 and 2 starts
// a second: 40, 45 and 25 CPU-ms per start. A trial without its quiet window, and one with no start, are
// left out; the estimate is the Hodges–Lehmann median of the Walsh averages of 25, 40, 45.
func TestChurnCosts(t *testing.T) {
	win := func(trial int, churning bool, kubelet float64, starts int) ChurnWindow {
		return ChurnWindow{Window: Window{Step: Step{Trial: trial}, Start: time.Unix(int64(trial*100), 0), Seconds: 4, Busy: 100 + kubelet,
			Groups: map[string]Cost{"kubelet": {CPU: kubelet}}}, Churning: churning, Starts: starts}
	}
	ch := &Churn{Rate: 1, Windows: []ChurnWindow{
		win(1, false, 10, 0), win(1, true, 50, 4),
		win(2, true, 60, 4), win(2, false, 15, 0),
		win(3, false, 20, 0), win(3, true, 70, 8),
		win(4, true, 70, 4),                       // no quiet window
		win(5, false, 10, 0), win(5, true, 30, 0), // no start
	}}
	ch.costs()
	var k StartCost
	for _, c := range ch.PerStart {
		if c.Name == "kubelet" {
			k = c
		}
	}
	// Walsh averages of {25, 40, 45}: 25, 32.5, 35, 40, 42.5, 45; their median 37.5.
	if k.N != 3 || math.Abs(k.CPUms-37.5) > 1e-9 || ch.Busy.N != 3 || math.Abs(ch.Busy.CPUms-37.5) > 1e-9 {
		t.Errorf("kubelet %+v, node busy %+v: want 37.5 CPU-ms over 3 trials", k, ch.Busy)
	}
	if rate, n := ch.Measured(); n != 5 || math.Abs(rate-20.0/20) > 1e-9 {
		t.Errorf("measured %v starts/s over %d churning windows; want 1 over 5", rate, n)
	}
	empty := &Churn{Rate: 1, Windows: []ChurnWindow{win(1, true, 50, 4)}}
	empty.costs()
	if empty.Busy.N != 0 || len(empty.shown()) != 0 {
		t.Errorf("one window alone: %+v %+v", empty.Busy, empty.shown())
	}
}
