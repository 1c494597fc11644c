package density

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/tare-dev/tare/internal/stats"
)

// Churn is what --churn measured: the CPU that starting and deleting pods at a steady rate costs, apart
// from the idle per-pod cost. Each trial has a churning window (a pod created every 1/Rate seconds, each
// deleted as soon as it runs) and a quiet one, in shuffled order, both with Base idle pods running; each
// group's extra CPU in the churning window, divided by the pods that started in it per second, is its CPU
// per pod start (the pod's start and its deletion: at a steady rate as many go as come).
type Churn struct {
	Rate     float64       `json:"rate_per_second"` // pod starts asked for
	Base     int           `json:"base_pods"`       // idle pods under both kinds of window
	Windows  []ChurnWindow `json:"windows"`
	Busy     StartCost     `json:"node_busy"`
	PerStart []StartCost   `json:"per_start"` // per group, the largest first
}

// ChurnWindow is one measured window of the churn phase.
type ChurnWindow struct {
	Window
	Churning bool `json:"churning"`
	// Starts counts the pods seen Running for the first time within the window, Created those created in it.
	Starts  int `json:"starts"`
	Created int `json:"created"`
}

// StartCost is one group's CPU per pod start: the Hodges–Lehmann estimate over the trials (each trial's
// extra CPU over its starts) with its interval and the Wilcoxon signed-rank p of "no extra CPU".
type StartCost struct {
	Name        string  `json:"name"`
	N           int     `json:"n"`
	CPUms       float64 `json:"cpu_ms"` // CPU-milliseconds per pod start
	Lo          float64 `json:"cpu_ms_low"`
	Hi          float64 `json:"cpu_ms_high"`
	Level       float64 `json:"ci_level"`
	P           float64 `json:"p_value"`
	Significant bool    `json:"significant"`
}

// MaxChurnRate bounds --churn: pod starts per second a node's kubelet is asked to keep up with.
const MaxChurnRate = 10.0

// ParseRate reads --churn: pod starts per second, or per minute with /min (30/min); /s is allowed.
func ParseRate(s string) (float64, error) {
	num, per := s, 1.0
	switch {
	case strings.HasSuffix(s, "/min"):
		num, per = strings.TrimSuffix(s, "/min"), 60
	case strings.HasSuffix(s, "/s"):
		num = strings.TrimSuffix(s, "/s")
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	r := v / per
	if err != nil || !(r > 0) || r > MaxChurnRate {
		return 0, fmt.Errorf("rate %q: want pod starts per second (0.5) or per minute (30/min), above 0 and at most %g a second", s, MaxChurnRate)
	}
	return r, nil
}

// churnPhase measures the churn windows: o.Trials pairs of a quiet and a churning window, each pair in
// shuffled order, with base idle pods running.
func churnPhase(ctx context.Context, cs kubernetes.Interface, o Options, node string, base int, charged map[string]map[bool]bool, say func(string, ...any)) (*Churn, error) {
	ch := &Churn{Rate: o.Churn, Base: base}
	if err := scale(ctx, cs, o, []string{node}, base); err != nil {
		return ch, err
	}
	rng := rand.New(rand.NewPCG(o.Seed^0x5bd1e995, o.Seed))
	for trial := 1; trial <= o.Trials; trial++ {
		kinds := []bool{false, true}
		rng.Shuffle(len(kinds), func(i, j int) { kinds[i], kinds[j] = kinds[j], kinds[i] })
		for _, churning := range kinds {
			what := "quiet"
			if churning {
				what = fmt.Sprintf("%.2f pod starts/s", o.Churn)
			}
			say("churn trial %d/%d: %s, %d idle pods on %s", trial, o.Trials, what, base, node)
			w, err := churnWindow(ctx, cs, o, node, Step{Trial: trial, Pods: base}, churning, charged)
			if w.Seconds > 0 {
				ch.Windows = append(ch.Windows, w)
			}
			if err != nil {
				ch.costs()
				return ch, err
			}
		}
	}
	ch.costs()
	return ch, nil
}

// churnWindow measures one window, churning or not. A churning window starts the churn, lets it reach its
// steady state (two pods' time, at least the settle time), measures, then stops it and waits until every
// churned pod is gone.
func churnWindow(ctx context.Context, cs kubernetes.Interface, o Options, node string, st Step, churning bool, charged map[string]map[bool]bool) (ChurnWindow, error) {
	cw := ChurnWindow{Churning: churning}
	var c *churner
	if churning {
		c = startChurn(ctx, cs, o, node)
		// Steady state: a pod's whole life (create → Running → teardown, about 2 s here) and two gaps.
		warm := max(o.Settle, 3*time.Second+time.Duration(2/o.Churn*float64(time.Second)))
		select {
		case <-ctx.Done():
		case <-time.After(warm):
		}
	} else {
		select {
		case <-ctx.Done():
		case <-time.After(o.Settle):
		}
	}
	if err := ctx.Err(); err != nil {
		if c != nil {
			_ = c.stop(context.WithoutCancel(ctx))
		}
		return cw, err
	}
	w, err := measure(ctx, o, st, charged)
	cw.Window = w
	if c != nil {
		end := w.Start.Add(time.Duration(w.Seconds * float64(time.Second)))
		cw.Starts, cw.Created = c.counts(w.Start, end)
		if serr := c.stop(context.WithoutCancel(ctx)); err == nil {
			err = serr
		}
	}
	if err == nil && ctx.Err() != nil {
		err = ctx.Err()
	}
	return cw, err
}

// Measured is the pod starts per second of the churning windows together, and how many there were.
func (ch *Churn) Measured() (rate float64, churning int) {
	var starts, secs float64
	for _, x := range ch.Windows {
		if x.Churning {
			starts, secs, churning = starts+float64(x.Starts), secs+x.Seconds, churning+1
		}
	}
	if secs > 0 {
		rate = starts / secs
	}
	return rate, churning
}

// costs computes the CPU per pod start of the node and of every group from the windows.
func (ch *Churn) costs() {
	type pair struct{ quiet, churn *ChurnWindow }
	pairs := map[int]*pair{}
	for i := range ch.Windows {
		w := &ch.Windows[i]
		p := pairs[w.Trial]
		if p == nil {
			p = &pair{}
			pairs[w.Trial] = p
		}
		if w.Churning {
			p.churn = w
		} else {
			p.quiet = w
		}
	}
	var full []pair
	names := map[string]bool{}
	for _, t := range slices.Sorted(maps.Keys(pairs)) {
		p := pairs[t]
		if p.quiet == nil || p.churn == nil || p.churn.Starts == 0 || p.churn.Seconds <= 0 {
			continue
		}
		full = append(full, *p)
		for g := range p.quiet.Groups {
			names[g] = true
		}
		for g := range p.churn.Groups {
			names[g] = true
		}
	}
	perStart := func(name string, cpu func(Window) float64) StartCost {
		var d []float64
		for _, p := range full {
			rate := float64(p.churn.Starts) / p.churn.Seconds
			d = append(d, (cpu(p.churn.Window)-cpu(p.quiet.Window))/rate) // millicores × seconds = CPU-ms
		}
		s := stats.SignedRank(d, 0.05)
		return StartCost{Name: name, N: len(d), CPUms: s.Estimate, Lo: s.Lo, Hi: s.Hi, Level: s.Level, P: s.P, Significant: s.Significant}
	}
	ch.Busy = perStart("node busy", func(w Window) float64 { return w.Busy })
	ch.PerStart = nil
	for _, name := range slices.Sorted(maps.Keys(names)) {
		ch.PerStart = append(ch.PerStart, perStart(name, func(w Window) float64 { return w.Groups[name].CPU }))
	}
	slices.SortStableFunc(ch.PerStart, func(a, b StartCost) int { return -cmp.Compare(nanLow(a.CPUms), nanLow(b.CPUms)) })
}

func nanLow(v float64) float64 {
	if math.IsNaN(v) {
		return math.Inf(-1)
	}
	return v
}

// shown are the groups whose CPU per start is worth a row: fitted, and not near zero unless significant.
func (ch *Churn) shown() []StartCost {
	var out []StartCost
	for _, c := range ch.PerStart {
		if !math.IsNaN(c.CPUms) && (math.Abs(c.CPUms) >= 0.05 || c.Significant) {
			out = append(out, c)
		}
	}
	return out
}

// table writes the churn phase: its windows' rates, then the CPU per pod start of the node and of every
// group that moved, with intervals.
func (ch *Churn) table(w io.Writer) error {
	rate, n := ch.Measured()
	fmt.Fprintf(w, "Pod churn: %.2f starts/s asked, %.2f measured (%d churning and %d quiet windows, %d idle pods under both).\n",
		ch.Rate, rate, n, len(ch.Windows)-n, ch.Base)
	fmt.Fprintf(w, "CPU per pod start, its deletion included (churning minus quiet window of each trial, over its starts; Hodges–Lehmann, p: Wilcoxon signed-rank):\n")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "GROUP\tN\tCPU-ms PER START\tINTERVAL\tp")
	row := func(c StartCost) {
		sig := ""
		if c.Significant {
			sig = " *"
		}
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t[%.1f, %.1f] (%.0f%%)\t%.3g%s\n", c.Name, c.N, c.CPUms, c.Lo, c.Hi, 100*c.Level, c.P, sig)
	}
	if ch.Busy.N == 0 {
		_, err := fmt.Fprintln(w, "  no trial has both its windows with pods started: nothing to compare.")
		return err
	}
	row(ch.Busy)
	for _, c := range ch.shown() {
		row(c)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if ch.Busy.N < 6 {
		_, err := fmt.Fprintf(w, "With %d trials no p can fall below %.3g: use --trials 6 or more for significance.\n", ch.Busy.N, math.Pow(2, 1-float64(ch.Busy.N)))
		return err
	}
	return nil
}
