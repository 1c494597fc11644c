package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/tare-dev/tare/internal/record"
	"github.com/tare-dev/tare/internal/stats"
)

// designs (-designs D, or -designs-from a recording): N idle control-plane-only labs (-designs-labs),
// started four at a time as a concurrent experiment starts them, measured by tare for D at 1 s; from the
// recording each lab's control-plane CPU second by second, and concurrent designs replayed on it: two
// shares (the odd and the even labs of the first K) swapping every round with the rotation's phases'
// estimate, and shares dealt at random every round with the lab-level estimate (what tare experiment
// runs), each round a window of W seconds starting S seconds after the previous one. For each design
// it prints the spread of a round's difference within phases (pooled over every start offset of the
// series), the rounds that fit in the budget and the smallest change they detect with 80% power, as %
// of a share's CPU, and the estimate's spread over the start offsets against its standard error (an A/A:
// a spread well above the se is a bias, not noise). It shows which window and which spacing of windows a
// concurrent experiment needs, and which to avoid.
func designs(o options) error {
	rec, within := o.designsFrom, ""
	if rec == "" {
		dir, err := os.MkdirTemp("", "tare-bench-designs-")
		if err != nil {
			return err
		}
		defer func() { _ = os.RemoveAll(dir) }()
		if rec, err = measureLabs(o, dir); err != nil {
			return err
		}
		within = dir + "/" // only these labs, not an experiment's beside them
	}
	r, err := record.Read(context.Background(), rec)
	if err != nil {
		return err
	}
	labs, secs := perLab(r, within)
	if len(labs) < 4 || float64(secs) < o.budget.Seconds() {
		return fmt.Errorf("%s: %d labs over %d s; want 4 labs or more over at least the budget (%s)", rec, len(labs), secs, o.budget)
	}
	fmt.Printf("\nconcurrent designs replayed on %d idle labs measured %d s at 1 s (%s): two shares swapping every round, %s budget\n",
		len(labs), secs, rec, o.budget)
	fmt.Printf("%5s %7s %15s %7s %-22s %16s %10s %14s %22s\n", "labs", "window", "start to start", "rounds", "shares, estimate", "sd of difference", "share", "detects (80%)", "estimate's spread / se")
	ks := []int{16, 24, 32}
	if n := len(labs) / 2 * 2; !slices.Contains(ks, n) {
		ks = append(ks, n)
	}
	for _, k := range ks {
		if k > len(labs) {
			continue
		}
		for _, d := range []struct{ w, s int }{{10, 16}, {20, 26}, {20, 20}, {40, 46}, {60, 66}, {27, 30}, {20, 60}, {45, 60}, {54, 60}, {114, 120}} {
			for _, m := range []struct {
				name string
				f    func([][]float64, int, int, int) (replayed, bool)
			}{{"rotating, phases", replay}, {"dealt, lab-level", replayLabs}} {
				x, ok := m.f(labs[:k], d.w, d.s, int(o.budget.Seconds()))
				if !ok {
					continue
				}
				fmt.Printf("%5d %6ds %14ds %7d %-22s %15.2fm %9.1fm %13.2f%% %9.2fm / %.2fm\n", k, d.w, d.s, x.rounds, m.name, x.sd, x.base, x.mdePct, x.spread, x.se)
			}
		}
	}
	return nil
}

// measureLabs starts the labs in dir, four at a time with their ports 100 apart from 2000 up (clear of
// an experiment's), lets them settle, records them for o.designs and stops them.
func measureLabs(o options, dir string) (string, error) {
	n := o.designsLabs
	errs := make([]error, n)
	var wg sync.WaitGroup
	slots := make(chan struct{}, 4)
	down := func(k int) {
		_ = exec.Command(o.tare, "lab", "down", "--dir", filepath.Join(dir, fmt.Sprintf("lab-%d", k))).Run()
	}
	defer func() {
		for k := 1; k <= n; k++ {
			down(k)
		}
	}()
	start := time.Now()
	for k := 1; k <= n; k++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			slots <- struct{}{}
			defer func() { <-slots }()
			out, err := exec.Command(o.tare, "lab", "up", "--control-plane-only", "--profile", o.profile,
				"--dir", filepath.Join(dir, fmt.Sprintf("lab-%d", k)), "--port-offset", strconv.Itoa(2000+100*(k-1))).CombinedOutput()
			if err != nil {
				errs[k-1] = fmt.Errorf("lab %d up: %w\n%s", k, err, tail(out))
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return "", err
	}
	fmt.Printf("%d labs up in %.0f s; measuring them for %s...\n", n, time.Since(start).Seconds(), o.designs)
	time.Sleep(20 * time.Second) // as an experiment's labs settle
	rec := filepath.Join(dir, "labs.db")
	if out, err := exec.Command(o.tare, "measure", "--duration", o.designs.String(), "--interval", "1s", "--record", rec, "-o", "json").CombinedOutput(); err != nil {
		return "", fmt.Errorf("measure: %w\n%s", err, tail(out))
	}
	return rec, nil
}

var labDir = regexp.MustCompile(`(/\S*/lab-(\d+))/`)

// perLab is each lab's CPU (millicores) second by second: the processes whose command line names a
// directory lab-K (under within, when not empty), by the directory's parent and K; secs is the series'
// length.
func perLab(r record.Recording, within string) (labs [][]float64, secs int) {
	secs = max(len(r.Samples)-1, 0)
	of := map[int64]string{} // process ID: its lab's directory
	series := map[string][]float64{}
	for i, s := range r.Samples {
		for _, p := range s.New {
			if m := labDir.FindStringSubmatch(p.Cmdline); m != nil && strings.HasPrefix(m[1], within) {
				of[p.ID] = m[1]
				if series[m[1]] == nil {
					series[m[1]] = make([]float64, secs)
				}
			}
		}
		if i == 0 || s.Elapsed <= 0 {
			continue
		}
		for _, p := range s.Procs {
			if d, ok := of[p.ID]; ok {
				series[d][i-1] += float64(p.CPUNs) / 1e6 / s.Elapsed.Seconds()
			}
		}
	}
	dirs := slices.Collect(maps.Keys(series))
	number := func(d string) int { k, _ := strconv.Atoi(labDir.FindStringSubmatch(d + "/")[2]); return k }
	slices.SortFunc(dirs, func(a, b string) int {
		return cmp.Or(strings.Compare(filepath.Dir(a), filepath.Dir(b)), cmp.Compare(number(a), number(b)))
	})
	for _, d := range dirs {
		labs = append(labs, series[d])
	}
	return labs, secs
}

// replayed is one design on one series.
type replayed struct {
	rounds   int
	sd, base float64 // m
	mdePct   float64
	// spread is the estimate's standard deviation over the start offsets (an A/A's: its truth is 0) and
	// se its mean standard error: well above 1 for spread/se, the design claims more than it has (a
	// periodic work locked to the rotation biases it).
	spread, se float64
}

// replay runs the design (window w s, windows s s apart, rounds that fit budget s) on the labs' series
// from every start offset in [0, s): the odd labs against the even ones, swapped every round; each
// offset's differences give a within-phase variance (stats.PhaseMean), pooled over the offsets.
func replay(labs [][]float64, w, s, budget int) (replayed, bool) {
	n := budget / s
	if w > s || n < 4 || len(labs) < 2 {
		return replayed{}, false
	}
	odd, even := make([]float64, len(labs[0])), make([]float64, len(labs[0]))
	var base float64
	for k, xs := range labs {
		for i, x := range xs {
			if k%2 == 0 {
				odd[i] += x // lab 1, 3, ...
			} else {
				even[i] += x
			}
		}
	}
	for _, x := range odd {
		base += x / float64(len(odd))
	}
	mean := func(xs []float64, a int) float64 {
		var m float64
		for _, x := range xs[a : a+w] {
			m += x / float64(w)
		}
		return m
	}
	var v float64
	var ests, ses []float64
	pooled, df := 0, 0
	for off := 0; off < s && off+n*s <= len(odd); off++ {
		d, ph := make([]float64, n), make([]int, n)
		for r := range n {
			a, b := odd, even
			if r%2 == 1 {
				a, b = even, odd
			}
			d[r], ph[r] = mean(a, off+r*s)-mean(b, off+r*s), r%2
		}
		e := stats.PhaseMean(d, ph, 2)
		if e.DF < 1 {
			continue
		}
		v += e.SD * e.SD
		ests, ses = append(ests, e.Mean), append(ses, e.SE)
		pooled++
		df = e.DF
	}
	if pooled == 0 {
		return replayed{}, false
	}
	sd := math.Sqrt(v / float64(pooled))
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(df)}
	se := sd * math.Sqrt(1/float64((n+1)/2)+1/float64(n/2)) / 2
	mde := (t.Quantile(0.975) + t.Quantile(0.8)) * se
	return replayed{rounds: n, sd: sd, base: base, mdePct: 100 * mde / base, spread: stat.StdDev(ests, nil), se: stat.Mean(ses, nil)}, true
}

// replayLabs runs the design as tare experiment does (window w s, windows s s apart, the rounds that fit
// budget s): every round the labs dealt at random to two equal shares, the lab-level estimate
// (stats.LabEffect) on each lab's window means, from every start offset in [0, s) with a few deals each.
// sd is the estimate's one-round noise on a share's sum (its SD times the labs in a share), as a plan
// takes it.
func replayLabs(labs [][]float64, w, s, budget int) (replayed, bool) {
	n := budget / s
	if w > s || n < 2 || len(labs) < 4 {
		return replayed{}, false
	}
	share := len(labs) / 2
	var base float64
	for k := range share {
		for _, x := range labs[2*k] {
			base += x / float64(len(labs[2*k]))
		}
	}
	rng := rand.New(rand.NewPCG(uint64(w), uint64(s)))
	var v float64
	var ests, ses []float64
	df := 0
	for off := 0; off < s && off+n*s <= len(labs[0]); off++ {
		for range 4 {
			var obs []stats.LabObs
			for r := range n {
				perm := rng.Perm(len(labs))
				for i, k := range perm {
					var m float64
					for _, x := range labs[k][off+r*s : off+r*s+w] {
						m += x / float64(w)
					}
					obs = append(obs, stats.LabObs{Lab: k, Round: r, Treated: i%2 == 1, Y: m})
				}
			}
			e := stats.LabEffect(obs)
			if e.DF < 1 {
				continue
			}
			v += e.SD * e.SD
			ests, ses = append(ests, e.Mean*float64(share)), append(ses, e.SE*float64(share))
			df = e.DF
		}
	}
	if len(ests) == 0 {
		return replayed{}, false
	}
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(df)}
	se := stat.Mean(ses, nil)
	mde := (t.Quantile(0.975) + t.Quantile(0.8)) * se
	return replayed{rounds: n, sd: math.Sqrt(v/float64(len(ests))) * float64(share), base: base, mdePct: 100 * mde / base,
		spread: stat.StdDev(ests, nil), se: se}, true
}
