package explain

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/tare-dev/tare/internal/output"
	"github.com/tare-dev/tare/internal/sample"
	"github.com/tare-dev/tare/internal/stats"
	"github.com/tare-dev/tare/internal/summary"
)

// Activity is what the per-interval series say: spikes above the baseline, what repeats and how often,
// who spawns short-lived processes on a timer, and whether CPUs idle between bursts of work.
type Activity struct {
	IntervalSeconds float64    `json:"interval_seconds"`
	Intervals       int        `json:"intervals"`
	Source          string     `json:"node_series_source"`
	Baseline        Baseline   `json:"node_baseline_millicores"`
	ThresholdMc     float64    `json:"spike_threshold_millicores"`
	Spikes          []Spike    `json:"spikes"`
	SpikePeriod     float64    `json:"spike_period_seconds,omitempty"` // median gap between spikes when regular
	NodePeriod      *Periodic  `json:"node_period,omitempty"`
	Periodic        []Periodic `json:"periodic_groups"`
	Pollers         []Poller   `json:"pollers"`
	Sawtooth        *Sawtooth  `json:"sawtooth,omitempty"`
	// Series is node busy in millicores per interval, and Times each interval's end, for charts.
	Series []float64   `json:"node_series_millicores"`
	Times  []time.Time `json:"times"`
}

// Spike is a run of intervals whose node busy is above the threshold.
type Spike struct {
	At       time.Time     `json:"at"`
	Seconds  float64       `json:"seconds"`
	PeakMc   float64       `json:"peak_millicores"`
	ExcessMs float64       `json:"excess_cpu_ms"`     // CPU above the baseline over the spike
	Groups   []Contributor `json:"groups"`            // who was above their own median, most first
	Started  []string      `json:"started,omitempty"` // short-lived commands that started in it
}

// Contributor is a group's CPU above its own median during a spike.
type Contributor struct {
	Group    string  `json:"group"`
	ExcessMs float64 `json:"excess_cpu_ms"`
}

// Periodic is a series that repeats itself.
type Periodic struct {
	Group         string  `json:"group"`
	PeriodSeconds float64 `json:"period_seconds"`
	Autocorr      float64 `json:"autocorrelation"`
	MeanMc        float64 `json:"mean_millicores"`
	SharePct      float64 `json:"share_of_busy_percent"`
}

// Poller is a process that starts the same short-lived command at a steady interval.
type Poller struct {
	ParentPID     int     `json:"parent_pid"`
	ParentCmdline string  `json:"parent_cmdline"`
	Group         string  `json:"group"`
	Cmdline       string  `json:"cmdline"`
	Runs          int     `json:"runs"`
	PeriodSeconds float64 `json:"period_seconds"`
	Irregularity  float64 `json:"irregularity"` // median |gap - period| / period
	CPUPerRunMs   float64 `json:"cpu_per_run_ms"`
	CPUMc         float64 `json:"cpu_millicores"`
	SharePct      float64 `json:"share_of_busy_percent"`
}

// Sawtooth is node busy swinging between bursts and idle gaps at a steady period: the pattern of a parent
// that hands out work only when it polls its workers (seed 004).
type Sawtooth struct {
	PeriodSeconds float64 `json:"period_seconds"`
	Autocorr      float64 `json:"autocorrelation"`
	HighMc        float64 `json:"burst_millicores"` // 90th percentile
	LowMc         float64 `json:"gap_millicores"`   // 10th percentile
	MeanMc        float64 `json:"mean_millicores"`
	IdlePct       float64 `json:"idle_between_bursts_percent"` // share of intervals in the gaps
	LostPct       float64 `json:"capacity_lost_percent"`       // (burst - mean) / burst
}

// spikeFloorMc keeps a quiet node's wobble from counting as spikes: a spike must be at least this far
// above the median (and 4 robust standard deviations).
const spikeFloorMc = 20

// maxPollerIrregularity: gaps may stray this far (median, as a fraction of the period) from the period.
const maxPollerIrregularity = 0.25

// Analyze reads the series of a measurement. sum is the summary of the same samples.
func Analyze(samples []sample.Sample, sum summary.Summary) Activity {
	a := Activity{Spikes: []Spike{}, Periodic: []Periodic{}, Pollers: []Poller{}}
	if len(samples) < 2 {
		return a
	}
	// The one definition of node busy, the reference of the summary's reconciliation.
	m := sample.NewBusyMeter(sum.Meta, samples)
	x, dt := m.Series(samples)
	a.Series, a.Source, a.Intervals = x, m.Name(), len(x)
	for _, s := range samples[1:] {
		a.Times = append(a.Times, s.Time)
	}
	a.IntervalSeconds = output.Round(sum.Window.Seconds/float64(len(x)), 3)
	a.Baseline = robustBaseline(x)
	a.ThresholdMc = output.Round(spikeThreshold(a.Baseline, spikeFloorMc), 1)
	gs := sum.GroupSeries()
	groupMed := map[string]float64{}
	for g, s := range gs {
		groupMed[g] = stats.MedianOf(s)
	}
	var spikeStarts []float64
	for _, r := range findSpikes(x, dt, a.Baseline, a.ThresholdMc) {
		sp := Spike{At: samples[r.first].Time, PeakMc: output.Round(r.peak, 1), ExcessMs: output.Round(r.excess, 1)}
		for i := r.first; i <= r.last; i++ {
			sp.Seconds += dt[i]
		}
		sp.Seconds = output.Round(sp.Seconds, 2)
		spikeStarts = append(spikeStarts, samples[r.first].Time.Sub(samples[0].Time).Seconds())
		for g, s := range gs {
			var ex float64
			for i := r.first; i <= r.last; i++ {
				ex += math.Max(0, s[i]-groupMed[g]) * dt[i]
			}
			if ex >= 1 {
				sp.Groups = append(sp.Groups, Contributor{Group: g, ExcessMs: output.Round(ex, 1)})
			}
		}
		sort.Slice(sp.Groups, func(i, j int) bool { return sp.Groups[i].ExcessMs > sp.Groups[j].ExcessMs })
		if len(sp.Groups) > 3 {
			sp.Groups = sp.Groups[:3]
		}
		from, to := samples[r.first].Time, samples[r.last+1].Time
		for _, c := range sum.Children {
			for _, st := range c.Starts {
				if !st.Before(from.Add(-time.Duration(dt[r.first]*float64(time.Second)))) && !st.After(to) {
					sp.Started = append(sp.Started, c.Cmdline)
					break
				}
			}
		}
		a.Spikes = append(a.Spikes, sp)
	}
	if p, irr := gapStats(spikeStarts); p > 0 && irr <= maxPollerIrregularity {
		a.SpikePeriod = output.Round(p, 2)
	}
	busy := sum.Reconcile.NodeBusy
	if lag, r := period(x); lag > 0 {
		a.NodePeriod = &Periodic{Group: "node", PeriodSeconds: output.Round(float64(lag)*a.IntervalSeconds, 2), Autocorr: output.Round(r, 2), MeanMc: output.Round(mean(x), 1), SharePct: 100}
	}
	for g, s := range gs {
		m := mean(s)
		if m < 1 {
			continue
		}
		if lag, r := period(s); lag > 0 && r >= 0.4 {
			a.Periodic = append(a.Periodic, Periodic{Group: g, PeriodSeconds: output.Round(float64(lag)*a.IntervalSeconds, 2),
				Autocorr: output.Round(r, 2), MeanMc: output.Round(m, 1), SharePct: output.Round(output.Percent(m, busy), 1)})
		}
	}
	sort.Slice(a.Periodic, func(i, j int) bool { return a.Periodic[i].MeanMc > a.Periodic[j].MeanMc })
	a.Pollers = pollers(sum)
	a.Sawtooth = sawtooth(x, a.IntervalSeconds, a.NodePeriod)
	return a
}

// pollers are short-lived commands started at least three times by one parent at a steady interval.
func pollers(sum summary.Summary) []Poller {
	out := []Poller{}
	for _, c := range sum.Children {
		if c.Runs < 3 {
			continue
		}
		var at []float64
		for _, s := range c.Starts {
			at = append(at, s.Sub(c.Starts[0]).Seconds())
		}
		p, irr := gapStats(at)
		if p <= 0 || irr > maxPollerIrregularity {
			continue
		}
		out = append(out, Poller{ParentPID: c.ParentPID, ParentCmdline: c.ParentCmdline, Group: c.Group, Cmdline: c.Cmdline,
			Runs: c.Runs, PeriodSeconds: output.Round(p, 2), Irregularity: output.Round(irr, 3), CPUPerRunMs: output.Round(c.CPUPerRunMs, 1),
			CPUMc: output.Round(c.CPU, 1), SharePct: output.Round(c.SharePct, 1)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CPUMc > out[j].CPUMc })
	return out
}

// sawtooth: the node repeats (autocorrelation ≥ 0.5), its bursts use at least half a core, the gaps are
// less than half the bursts, and the node spends 15–85% of the time in the gaps. A poller's brief blips
// have too small a duty cycle to count: they are overhead, not starved work.
func sawtooth(x []float64, interval float64, p *Periodic) *Sawtooth {
	if p == nil || p.Autocorr < 0.5 {
		return nil
	}
	hi, lo := quantile(x, 0.9), quantile(x, 0.1)
	if hi < 500 || lo > hi/2 {
		return nil
	}
	mid := (hi + lo) / 2
	gaps := 0
	for _, v := range x {
		if v < mid {
			gaps++
		}
	}
	idle := float64(gaps) / float64(len(x))
	if idle < 0.15 || idle > 0.85 {
		return nil
	}
	m := mean(x)
	return &Sawtooth{PeriodSeconds: p.PeriodSeconds, Autocorr: p.Autocorr, HighMc: output.Round(hi, 1), LowMc: output.Round(lo, 1),
		MeanMc: output.Round(m, 1), IdlePct: output.Round(100*idle, 1), LostPct: output.Round(output.Percent(hi-m, hi), 1)}
}

func mean(x []float64) float64 {
	if len(x) == 0 {
		return 0
	}
	var s float64
	for _, v := range x {
		s += v
	}
	return s / float64(len(x))
}

// describePoller is the one-line statement of a poller finding.
func describePoller(p Poller) string {
	return fmt.Sprintf("every %.1f s, %s (pid %d, group %s) runs `%s`, %.0f ms CPU per run",
		p.PeriodSeconds, summary.Clip(p.ParentCmdline, 40), p.ParentPID, p.Group, summary.Clip(p.Cmdline, 80), p.CPUPerRunMs)
}
