package sample

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/tare-dev/tare/internal/testload"
)

// TestTaskTimeAtSampleTime: the window opens on a quiet node and closes with six burning processes per CPU,
// so the closing pass (every process read, the sampler getting a seventh of a CPU) is the slow one. Node busy over the window must not
// exceed what the node has: with the task time read at the end of each pass it spanned the window plus
// the difference of the two passes' lengths (2.2 cores on 2, once, in a datapath trial).
func TestTaskTimeAtSampleTime(t *testing.T) {
	if testing.Short() {
		t.Skip("burns every CPU for two seconds")
	}
	s, err := New(context.Background(), Options{Interval: 250 * time.Millisecond, Detail: 250 * time.Millisecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	first, err := s.Sample()
	if err != nil {
		t.Fatal(err)
	}
	cpus := runtime.NumCPU()
	for range 6 * cpus {
		testload.StartBurner(t, 1000)
	}
	samples := []Sample{first}
	for range 5 {
		time.Sleep(250 * time.Millisecond)
		smp, err := s.Sample()
		if err != nil {
			t.Fatal(err)
		}
		samples = append(samples, smp)
	}
	time.Sleep(250 * time.Millisecond)
	last, err := s.SampleFinal()
	if err != nil {
		t.Fatal(err)
	}
	samples = append(samples, last)
	cpus = s.Meta().CPUs // the node's, which node busy is of (NumCPU is this process's affinity)
	m := NewBusyMeter(s.Meta(), samples)
	w := m.Window(samples)
	t.Logf("first pass %s, closing pass %s; node busy %.0fm ± %.0fm over %.2f s (%s) on %d CPUs",
		first.Took.Round(time.Millisecond), last.Took.Round(time.Millisecond), w.Millicores, w.Resolution, w.Seconds, m.Name(), cpus)
	if limit := 1000 * float64(cpus) * 1.01; w.Millicores > limit {
		t.Errorf("node busy %.0fm on %d CPUs", w.Millicores, cpus)
	}
}
