package explain

import (
	"math"
	"math/rand/v2"
	"testing"
)

// pulses is a quiet series with a burst of height h every p intervals, plus noise.
func pulses(n, p int, base, h, noise float64, rng *rand.Rand) []float64 {
	x := make([]float64, n)
	for i := range x {
		x[i] = base + noise*rng.NormFloat64()
		if i%p == 1 {
			x[i] += h
		}
	}
	return x
}

func TestPeriodFindsThePulseTrain(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, p := range []int{2, 5, 10} {
		x := pulses(120, p, 40, 80, 3, rng)
		lag, r := period(x)
		if lag != p || r < 0.5 {
			t.Errorf("pulses every %d: period %d (r=%.2f)", p, lag, r)
		}
	}
}

func TestPeriodNoneInNoise(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	false := 0
	for trial := 0; trial < 200; trial++ {
		x := make([]float64, 60)
		for i := range x {
			x[i] = 40 + 5*rng.NormFloat64()
		}
		if lag, _ := period(x); lag != 0 {
			false++
		}
	}
	// The floor above the white-noise bound keeps false periods rare.
	if false > 4 {
		t.Errorf("white noise showed a period in %d of 200 series", false)
	}
}

func TestSpikesAboveRobustBaseline(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	x := pulses(60, 5, 40, 80, 3, rng)
	dt := make([]float64, len(x))
	for i := range dt {
		dt[i] = 1
	}
	b := robustBaseline(x)
	if math.Abs(b.Median-40) > 3 || b.MAD > 6 {
		t.Errorf("baseline %+v: one burst in five moved it", b)
	}
	runs := findSpikes(x, dt, b, spikeThreshold(b, spikeFloorMc))
	if len(runs) != 12 {
		t.Fatalf("%d spikes, want 12", len(runs))
	}
	var at []float64
	for _, r := range runs {
		at = append(at, float64(r.first))
		if r.excess < 60 || r.excess > 100 {
			t.Errorf("spike at %d: excess %.1f, want ~80", r.first, r.excess)
		}
	}
	p, irr := gapStats(at)
	if p != 5 || irr != 0 {
		t.Errorf("spike gaps: period %v irregularity %v, want 5 and 0", p, irr)
	}
}

func TestSawtoothVersusPoller(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	// Workers busy on both CPUs for 3 s, then 3 s of waiting for the parent's next poll.
	work := make([]float64, 60)
	for i := range work {
		work[i] = 60 + 5*rng.NormFloat64()
		if i%6 < 3 {
			work[i] = 1900 + 20*rng.NormFloat64()
		}
	}
	lag, r := period(work)
	st := sawtooth(work, 1, &Periodic{PeriodSeconds: float64(lag), Autocorr: r})
	if st == nil || st.PeriodSeconds != 6 || st.IdlePct != 50 || st.LostPct < 45 || st.LostPct > 50 {
		t.Errorf("sawtooth = %+v, want period 6, 50%% idle, ~48%% capacity lost", st)
	}
	// A poller's blips repeat too, but are overhead, not starved work.
	blips := pulses(60, 5, 40, 80, 3, rng)
	lag, r = period(blips)
	if st := sawtooth(blips, 1, &Periodic{PeriodSeconds: float64(lag), Autocorr: r}); st != nil {
		t.Errorf("a poller's blips called a sawtooth: %+v", st)
	}
}
