package main

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// A series that is a periodic burst and nothing else: the oracle (the periodic part known) and
// phase-matched pairs both cancel it; with white noise on top, the oracle is left with the noise alone.
func TestPeriodBounds(t *testing.T) {
	o := options{budget: 10 * time.Minute, warmup: 2 * time.Second, trialOverhead: time.Second}
	const period, cycles = 120, 8
	rng := rand.New(rand.NewPCG(1, 2))
	periodic, noisy := make([]float64, period*cycles), make([]float64, period*cycles)
	for i := range periodic {
		periodic[i] = 30
		if i%period == 99 {
			periodic[i] = 120 // the burst
		}
		noisy[i] = periodic[i] + rng.NormFloat64()*3
	}
	b := periodBounds(o, periodic, period, 20)
	if !(b.matched < 1e-9) || !(b.oracle < 1e-9) || !(sideBySide(o, periodic, period) < 1e-9) {
		t.Errorf("a purely periodic series: matched %.3g%%, oracle %.3g%%, side by side %.3g%%, want 0", b.matched, b.oracle,
			sideBySide(o, periodic, period))
	}
	// White noise of sd 3 over 20 s windows: a pair's difference has sd 3·√(2/20); 15 pairs in 10 minutes.
	b = periodBounds(o, noisy, period, 20)
	want := 100 * 2.8 * 3 * math.Sqrt(2.0/20) / math.Sqrt(15) / 30.75
	if b.oraclePairs != 15 || !(b.oracle > 0.6*want && b.oracle < 1.4*want) {
		t.Errorf("oracle %.2f%% with %d pairs, want about %.2f%% with 15", b.oracle, b.oraclePairs, want)
	}
	// Side by side: the difference of two labs' means over 600 s of white noise of sd 3.
	if side, want := sideBySide(o, noisy, period), 100*2.8*math.Sqrt2*3/math.Sqrt(600)/30.75; !(side > 0.6*want && side < 1.4*want) {
		t.Errorf("side by side %.2f%%, want about %.2f%%", side, want)
	}
	// A drift (a slow random walk) that adjacent pairs cancel but two labs' means keep: side by side sees it.
	drifting := slices.Clone(noisy)
	level := 0.0
	for i := range drifting {
		level += rng.NormFloat64() * 0.3
		drifting[i] += level
	}
	if side, white := sideBySide(o, drifting, period), sideBySide(o, noisy, period); !(side > 2*white) {
		t.Errorf("side by side with a drift %.2f%%, without %.2f%%: want the drift to count", side, white)
	}
	if b := periodBounds(o, noisy, period, 7); !math.IsNaN(b.matched) {
		t.Errorf("a window that does not divide the period: matched %.2f%%, want NaN", b.matched)
	}
	if b := periodBounds(o, noisy[:2*period], period, 20); !math.IsNaN(b.oracle) {
		t.Errorf("two cycles: oracle %.2f%%, want NaN (too few to know the periodic part)", b.oracle)
	}
}

func TestSeriesRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.csv")
	per := map[string][]float64{"etcd": {1.5, 2.25}, "kube-apiserver": {10, 11}}
	if err := writeSeries(path, []string{"etcd", "kube-apiserver"}, per, 2); err != nil {
		t.Fatal(err)
	}
	names, got, err := readSeries(path)
	if err != nil || len(names) != 2 || got["etcd"][1] != 2.25 || got["kube-apiserver"][0] != 10 {
		t.Fatalf("read %v %v %v", names, got, err)
	}
	for name, body := range map[string]string{"empty": "", "header only": "etcd\n", "not a number": "etcd\nx\n", "ragged": "a,b\n1\n",
		"NaN": "etcd\nNaN\n", "negative": "etcd\n-1\n", "a column twice": "etcd,etcd\n1,2\n", "an unnamed column": "etcd,\n1,2\n"} {
		p := filepath.Join(t.TempDir(), "bad.csv")
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, _, err := readSeries(p); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
