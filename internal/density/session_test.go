package density

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/tare-dev/tare/internal/sample"
	"github.com/tare-dev/tare/internal/session"
	"github.com/tare-dev/tare/internal/testenv"
	"github.com/tare-dev/tare/internal/testload"
)

// TestWindowBaselineHasSmaps: a density window's session reads the baseline's memory exactly: idle
// sleepers, started by the test, have their smaps_rollup PSS in the baseline sample, as the test reads
// it from each one's own smaps_rollup, not statm's estimate (the deferral that cost kube-reserved's PSS
// a third of its value).
func TestWindowBaselineHasSmaps(t *testing.T) {
	testenv.NeedRoot(t, "other processes' smaps_rollup needs root")
	const n = 50
	pids := testload.Sleepers(t, n)
	testload.WaitSleeping(t, pids) // each asleep first: a process that ran is read at once anyway
	so := session.Options{Sampler: sample.Options{Interval: 500 * time.Millisecond, Detail: 500 * time.Millisecond},
		Duration: 500 * time.Millisecond, Version: "v-test"}
	res, err := session.Measure(context.Background(), sessionOptions(so))
	if err != nil {
		t.Fatal(err)
	}
	base := res.Samples[0]
	ids := map[int64]int{}
	for _, p := range base.New {
		ids[p.ID] = p.Key.PID
	}
	rows := map[int]sample.ProcSample{}
	for _, ps := range base.Procs {
		if pid, ok := ids[ps.ID]; ok && ps.HasDetail {
			rows[pid] = ps
		}
	}
	for _, pid := range pids {
		want := testload.SmapsRollup(t, pid)["Pss"]
		got, ok := rows[pid]
		// Sleepers share libc's pages: their PSS moves a little as processes come and go meanwhile.
		if !ok || got.StatmOnly || math.Abs(float64(got.PSS)-float64(want)) > 0.1*float64(want) {
			t.Errorf("sleeper %d: baseline memory %+v (found: %v), its smaps_rollup says PSS %d", pid, got, ok, want)
		}
	}
}
