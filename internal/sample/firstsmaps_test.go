package sample

import (
	"math"
	"testing"
	"time"

	"github.com/tare-dev/tare/internal/kernel"
	"github.com/tare-dev/tare/internal/testload"
)

// TestLongRunningYoungFromStatm: a long-running sampler (the agent) reads a process younger than the
// detail interval from statm alone: its RSS the resident size, its PSS and private memory its anonymous
// resident pages; once it has lived a detail interval, its next detail reading is from smaps_rollup, whether
// it ran since (a burner) or not (an idle helper): PSS and private memory then what its own smaps_rollup
// says.
func TestLongRunningYoungFromStatm(t *testing.T) {
	const interval, detail = 250 * time.Millisecond, 4 * time.Second
	s := newFilteredSampler(t, Options{Interval: interval, Detail: detail, LongRunning: true})
	if _, err := s.Sample(); err != nil {
		t.Fatal(err)
	}
	pids := map[string]int{"idle": 0, "burner": 0}
	pids["idle"] = testload.Launch(t, "idle").Pid()
	pids["burner"] = testload.StartBurner(t, 100)
	started := time.Now()
	// Samples back to back: the detail sample comes by count (every 16th), well before either is 4 s old.
	// A young helper's resident size may still grow (a race-instrumented binary starting on a busy
	// machine): the peer is its smaps_rollup read just before and just after the sample that read its
	// detail, and statm's figure must fall between the two.
	type bracket struct{ lo, hi uint64 }
	read := map[string]bracket{}
	for range int(s.meta.Detail / s.meta.Interval) {
		before, prev := map[string]uint64{}, map[string]*kernel.Detail{}
		for name, pid := range pids {
			before[name] = testload.SmapsRollup(t, pid)["Rss"]
			if st := s.procs[pid]; st != nil {
				prev[name] = st.detail
			}
		}
		if _, err := s.Sample(); err != nil {
			t.Fatal(err)
		}
		for name, pid := range pids {
			if st := s.procs[pid]; st != nil && st.detail != nil && st.detail != prev[name] {
				after := testload.SmapsRollup(t, pid)["Rss"]
				read[name] = bracket{min(before[name], after), max(before[name], after)}
			}
		}
	}
	if age := time.Since(started); age >= detail {
		t.Skipf("the first detail sample came %v after the helpers started (a loaded machine), not younger than %v", age, detail)
	}
	for name, pid := range pids {
		st := s.procs[pid]
		if st == nil || st.detail == nil {
			t.Fatalf("%s (%d): no detail reading at the first detail sample", name, pid)
		}
		d := st.detail
		rss := read[name]
		t.Logf("%s young: statm only %v, RSS %d, PSS %d, private %d; its smaps_rollup Rss %d to %d around the reading", name, d.StatmOnly, d.RSS, d.PSS, d.Private, rss.lo, rss.hi)
		if !d.StatmOnly {
			t.Errorf("%s: read from smaps_rollup while younger than the detail interval", name)
		}
		if float64(d.RSS) < 0.95*float64(rss.lo) || float64(d.RSS) > 1.05*float64(rss.hi) {
			t.Errorf("%s: RSS %d from statm, smaps_rollup says %d to %d around the reading", name, d.RSS, rss.lo, rss.hi)
		}
		if d.Private > d.RSS || d.PSS != d.Private || d.Private == 0 {
			t.Errorf("%s: PSS %d and private %d from statm's anonymous pages, RSS %d", name, d.PSS, d.Private, d.RSS)
		}
	}
	time.Sleep(time.Until(started.Add(detail + 100*time.Millisecond)))
	for range int(s.meta.Detail / s.meta.Interval) {
		if _, err := s.Sample(); err != nil {
			t.Fatal(err)
		}
	}
	for name, pid := range pids {
		d := s.procs[pid].detail
		m := testload.SmapsRollup(t, pid)
		pss, private := m["Pss"], m["Private_Clean"]+m["Private_Dirty"]
		t.Logf("%s old: statm only %v, PSS %d, private %d; its smaps_rollup Pss %d, private %d", name, d.StatmOnly, d.PSS, d.Private, pss, private)
		if d.StatmOnly {
			t.Errorf("%s: still from statm alone after it lived the detail interval", name)
			continue
		}
		for _, c := range []struct {
			what      string
			got, want uint64
		}{{"PSS", d.PSS, pss}, {"private", d.Private, private}} {
			if rel := math.Abs(float64(c.got)-float64(c.want)) / float64(c.want); rel > 0.05 {
				t.Errorf("%s: %s %d, its own smaps_rollup says %d (%.1f%% apart)", name, c.what, c.got, c.want, rel*100)
			}
		}
	}
}
