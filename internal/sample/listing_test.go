package sample

import (
	"testing"
	"time"

	"github.com/tare-dev/tare/internal/kernel"
)

// TestListingCadence: without start notifications every sample lists /proc; with them, detail samples do,
// and in a long-running sampler only the first, one after a notification was lost, and one a listEvery
// after the last listing.
func TestListingCadence(t *testing.T) {
	now := time.Now()
	if !(&Sampler{}).listing(now, false) {
		t.Error("without start notifications a sample did not list /proc")
	}
	short := &Sampler{execs: &starts{}, exits: &kernel.ExitListener{}}
	if short.listing(now, false) || !short.listing(now, true) || !short.listing(now, true) {
		t.Error("tare measure: want a listing on every detail sample and on no other")
	}
	s := &Sampler{opts: Options{LongRunning: true}, execs: &starts{}, exits: &kernel.ExitListener{}}
	list := func(at time.Duration) bool {
		ok := s.listing(now.Add(at), true)
		if ok {
			s.lastList = now.Add(at)
		}
		return ok
	}
	if !list(0) {
		t.Fatal("the first detail sample did not list /proc")
	}
	if list(5*time.Second) || list(10*time.Second) {
		t.Error("listed again with nothing lost, within listEvery")
	}
	s.exits.Dropped++
	if !list(15 * time.Second) {
		t.Error("no listing after exit notifications were dropped")
	}
	if list(20 * time.Second) {
		t.Error("listed again for the same drop")
	}
	s.execs.lost++
	if !list(25 * time.Second) {
		t.Error("no listing after starts were lost")
	}
	if list(25*time.Second+listEvery-time.Second) || !list(25*time.Second+listEvery) {
		t.Errorf("want the next listing %s after the last", listEvery)
	}
	if s.listing(now.Add(time.Hour), false) {
		t.Error("a sample that is not a detail sample listed /proc")
	}
}
