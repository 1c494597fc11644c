package explain

import (
	"math"
	"sort"

	"github.com/tare-dev/tare/internal/stats"
)

// Baseline is a robust centre and spread: the median and the median absolute deviation scaled to the
// standard deviation of a normal distribution (×1.4826), so one burst does not move them.
type Baseline struct {
	Median float64 `json:"median"`
	MAD    float64 `json:"mad"`
}

func robustBaseline(x []float64) Baseline {
	if len(x) == 0 {
		return Baseline{}
	}
	m, mad := stats.Robust(x)
	return Baseline{Median: m, MAD: mad}
}

func quantile(x []float64, q float64) float64 {
	s := append([]float64(nil), x...)
	sort.Float64s(s)
	if len(s) == 0 {
		return 0
	}
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

// spikeRun is a run of consecutive intervals above the threshold.
type spikeRun struct {
	first, last int     // interval indexes, inclusive
	peak        float64 // highest value in the run
	excess      float64 // sum over the run of (value - median) × interval seconds: CPU-seconds×1000
}

// spikeThreshold is the median plus 4 robust standard deviations, and at least floor above the median:
// on a quiet node the MAD can be a fraction of a millicore and every wobble would count.
func spikeThreshold(b Baseline, floor float64) float64 {
	return b.Median + math.Max(4*b.MAD, floor)
}

// findSpikes returns runs of intervals above the threshold. dt is each interval's length in seconds.
func findSpikes(x, dt []float64, b Baseline, threshold float64) []spikeRun {
	var runs []spikeRun
	for i := 0; i < len(x); i++ {
		if x[i] <= threshold {
			continue
		}
		r := spikeRun{first: i}
		for ; i < len(x) && x[i] > threshold; i++ {
			r.last = i
			r.peak = math.Max(r.peak, x[i])
			r.excess += (x[i] - b.Median) * dt[i]
		}
		runs = append(runs, r)
	}
	return runs
}

// period finds the lag, in intervals, at which the series best repeats itself: the first local maximum of
// the autocorrelation that comes within 90% of the highest one (a pattern that repeats every 5 intervals
// also correlates at 10 and 15), among lags from 2 to a third of the series. It returns 0 when nothing
// correlates above both 0.35 and 1.5 times the 95% bound for white noise (2/√n): the best of n/3 lags
// of pure noise clears the plain bound too often.
func period(x []float64) (lag int, r float64) {
	n := len(x)
	if n < 6 {
		return 0, 0
	}
	mean := 0.0
	for _, v := range x {
		mean += v
	}
	mean /= float64(n)
	var den float64
	for _, v := range x {
		den += (v - mean) * (v - mean)
	}
	if den == 0 {
		return 0, 0
	}
	maxLag := n / 3
	acf := make([]float64, maxLag+2)
	for k := 1; k <= maxLag+1 && k < n; k++ {
		var s float64
		for t := 0; t+k < n; t++ {
			s += (x[t] - mean) * (x[t+k] - mean)
		}
		acf[k] = s / den
	}
	best := 0.0
	for k := 2; k <= maxLag; k++ {
		best = math.Max(best, acf[k])
	}
	floor := math.Max(0.35, 3/math.Sqrt(float64(n)))
	if best < floor {
		return 0, 0
	}
	for k := 2; k <= maxLag; k++ {
		if acf[k] >= 0.9*best && acf[k] >= acf[k-1] && acf[k] >= acf[k+1] {
			return k, acf[k]
		}
	}
	return 0, 0
}

// gapStats are the median gap between sorted times in seconds and how regular the gaps are (the median
// absolute deviation of the gaps over their median: 0 is a metronome).
func gapStats(starts []float64) (medianGap, irregularity float64) {
	if len(starts) < 3 {
		return 0, math.Inf(1)
	}
	gaps := make([]float64, 0, len(starts)-1)
	for i := 1; i < len(starts); i++ {
		gaps = append(gaps, starts[i]-starts[i-1])
	}
	m := stats.MedianOf(gaps)
	if m <= 0 {
		return 0, math.Inf(1)
	}
	dev := make([]float64, len(gaps))
	for i, g := range gaps {
		dev[i] = math.Abs(g - m)
	}
	return m, stats.MedianOf(dev) / m
}
