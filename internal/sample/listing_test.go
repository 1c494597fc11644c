package sample

import (
	"fmt"
	"testing"
	"time"

	"github.com/tare-dev/tare/internal/kernel"
)

// TestListingCadence: without start notifications every sample lists /proc; with them, detail samples and
// the final one do, and in a long-running sampler only the first, one after a notification was lost (or a
// read of them failed), one a listEvery after the last listing, and the final one. A loss counts as
// covered only once a listing succeeded.
func TestListingCadence(t *testing.T) {
	now := time.Now()
	if ok, _ := (&Sampler{}).listing(now, false, false); !ok {
		t.Error("without start notifications a sample did not list /proc")
	}
	if ok, _ := (&Sampler{execs: &starts{}}).listing(now, true, false); !ok {
		t.Error("without exit notifications a detail sample did not list /proc")
	}
	// tare measure and the agent alike.
	for _, long := range []bool{false, true} {
		t.Run(fmt.Sprintf("long-running=%v", long), func(t *testing.T) { testListingCadence(t, now, long) })
	}
}

func testListingCadence(t *testing.T, now time.Time, long bool) {
	s := &Sampler{opts: Options{LongRunning: long}, execs: &starts{}, exits: &kernel.ExitListener{}, seq: 1}
	if ok, _ := (&Sampler{opts: s.opts, execs: s.execs, exits: s.exits}).listing(now, false, false); !ok {
		t.Error("the baseline did not list /proc")
	}
	// list is one detail sample at `at` whose listing succeeds unless failed is set.
	list := func(at time.Duration, failed bool) bool {
		ok, loss := s.listing(now.Add(at), true, false)
		if ok && !failed {
			s.lastList, s.listedLoss = now.Add(at), loss
		}
		return ok
	}
	if !list(0, false) {
		t.Fatal("the first detail sample did not list /proc")
	}
	if list(5*time.Second, false) || list(10*time.Second, false) {
		t.Error("listed again with nothing lost, within listEvery")
	}
	s.exits.Dropped++
	if !list(15*time.Second, true) {
		t.Error("no listing after exit notifications were dropped")
	}
	if !list(20*time.Second, false) {
		t.Error("a failed listing counted the drop as covered")
	}
	if list(25*time.Second, false) {
		t.Error("listed again for the same drop")
	}
	s.execs.lost++
	if !list(30*time.Second, false) {
		t.Error("no listing after starts were lost")
	}
	s.drainErrs++
	if !list(35*time.Second, false) {
		t.Error("no listing after a read of exit notifications failed")
	}
	if list(35*time.Second+listEvery-time.Second, false) || !list(35*time.Second+listEvery, false) {
		t.Errorf("want the next listing %s after the last", listEvery)
	}
	if ok, _ := s.listing(now.Add(time.Hour), false, false); ok {
		t.Error("a sample that is neither detail nor final listed /proc")
	}
	if ok, _ := s.listing(now.Add(35*time.Second+listEvery), true, true); !ok {
		t.Error("the final sample did not list /proc")
	}
}
