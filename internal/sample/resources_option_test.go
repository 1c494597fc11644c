package sample

import (
	"context"
	"testing"
	"time"
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
