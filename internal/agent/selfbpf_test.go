package agent

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tare-dev/tare/internal/bpfstats"
)

// TestBPFStateSumsDeltas: the counter is the sum of the programs' deltas after the baseline, which only
// sets the starting point.
func TestBPFStateSumsDeltas(t *testing.T) {
	t.Parallel()
	var b bpfState
	b.add([]bpfstats.Stat{{Name: "exec", RunTime: time.Second, RunCount: 1}}, true)
	b.add([]bpfstats.Stat{{Name: "exec", RunTime: 3 * time.Second, RunCount: 5},
		{Name: "pass", InSelf: true, RunTime: time.Second, RunCount: 1}}, false)
	b.add([]bpfstats.Stat{{Name: "exec", RunTime: 4 * time.Second, RunCount: 6},
		{Name: "pass", InSelf: true, RunTime: 3 * time.Second, RunCount: 2}}, false)
	if d := cmp.Diff(map[string]float64{"exec": 3, "pass": 3}, b.seconds); d != "" {
		t.Errorf("seconds (-want +got):\n%s", d)
	}
	if !b.inSelf["pass"] || b.inSelf["exec"] {
		t.Errorf("inSelf %v", b.inSelf)
	}
}
