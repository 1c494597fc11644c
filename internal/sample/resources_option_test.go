package sample

import (
	"context"
	"testing"
	"time"

	"github.com/tare-dev/tare/internal/kernel"
)

// TestNoResources: the agent's sampler reads no memory, disk or network counters; every other sampler
// reads them on its first sample (explain's USE view takes the first and the last).
func TestNoResources(t *testing.T) {
	t.Parallel()
	for _, skip := range []bool{false, true} {
		s, err := New(context.Background(), Options{Interval: time.Second, Detail: time.Second, NoResources: skip}, nil)
		if err != nil {
			t.Fatal(err)
		}
		smp, err := s.Sample()
		s.Close()
		if err != nil {
			t.Fatal(err)
		}
		if got := smp.Node.Resources != nil; got == skip {
			t.Errorf("NoResources %v: resources read %v", skip, got)
		} else if !skip && smp.Node.Resources.MemTotal == 0 {
			t.Errorf("resources read without the memory total: %+v", smp.Node.Resources)
		}
	}
}

// TestResourcesOnDetailSamples: the counters are read on the baseline, on each detail sample and on the
// final one, and carried over (the same reading) between them.
func TestResourcesOnDetailSamples(t *testing.T) {
	t.Parallel()
	s, err := New(context.Background(), Options{Interval: 10 * time.Millisecond, Detail: 30 * time.Millisecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var prev *kernel.Resources
	for i := range 5 {
		take := s.Sample
		if i == 4 {
			take = s.SampleFinal
		}
		smp, err := take()
		if err != nil {
			t.Fatal(err)
		}
		fresh := i == 0 || smp.Node.Resources != prev
		if want := i%3 == 0 || i == 4; smp.Node.Resources == nil || fresh != want {
			t.Errorf("sample %d: resources %p (previous %p), want a fresh reading %v", i, smp.Node.Resources, prev, want)
		}
		prev = smp.Node.Resources
	}
}
