package htmlreport

import (
	"fmt"
	"math"

	"github.com/tare-dev/tare/internal/output"
)

// scatterFitData is the chart input of kind scatterfit: a figure at each step against the pod count, a
// dot per step, with the line fitted to the dots and the band of its slope's interval.
type scatterFitData struct {
	Name    string     `json:"name"` // what was measured: a component, node busy
	Unit    string     `json:"unit"`
	Caption string     `json:"caption"` // the line in words, as the tables give it
	Points  []fitPoint `json:"points"`  // in the order measured
	// Line is the fitted line's ends, [pods, value] at the fewest and the most pods measured; null
	// without a line.
	Line [][2]float64 `json:"line"`
	// Band is [pods, lower, upper] at the fewest pods, the pivot and the most pods: between the lines
	// whose slopes are the ends of the slope's interval, both through the fitted line at the pivot, the
	// steps' mean pod count. Null without an interval.
	Band [][3]float64 `json:"band"`
}

type fitPoint struct {
	Pods  int     `json:"pods"`
	Value float64 `json:"value"`
	Trial int     `json:"trial"`
}

// Units of the density charts: CPU as measured, memory in MiB (mib scales bytes to it).
const (
	cpuUnit = "millicores"
	memUnit = "MiB"
	mib     = 1.0 / (1 << 20)
)

// scatterFit is the chart of a series: each step's value times scale (a value that is not finite is left
// out: the chart data is JSON), the line over the pod counts measured, and the band of its slope's
// interval. A line needs two pod counts and a fitted Fixed and Marginal; the band also Lo and Hi.
func scatterFit(name, unit string, steps []DensityStep, s DensitySeries, scale float64) scatterFitData {
	d := scatterFitData{Name: name, Unit: unit, Caption: fitCaption(s.Fit, unit), Points: []fitPoint{}}
	if len(steps) == 0 {
		return d
	}
	fewest, most := steps[0].Pods, steps[0].Pods
	sum := 0.0
	for i, st := range steps {
		fewest, most = min(fewest, st.Pods), max(most, st.Pods)
		sum += float64(st.Pods)
		if i < len(s.Values) && finite(s.Values[i]) {
			d.Points = append(d.Points, fitPoint{Pods: st.Pods, Value: scale * s.Values[i], Trial: st.Trial})
		}
	}
	f := s.Fit
	if fewest == most || !finite(f.Fixed) || !finite(f.Marginal) {
		return d
	}
	at := func(x float64) float64 { return scale * (f.Fixed + f.Marginal*x) }
	lo, hi := float64(fewest), float64(most)
	d.Line = [][2]float64{{lo, at(lo)}, {hi, at(hi)}}
	if !finite(f.Lo) || !finite(f.Hi) {
		return d
	}
	pivot := sum / float64(len(steps))
	edge := func(x float64) [3]float64 {
		a, b := at(pivot)+scale*f.Lo*(x-pivot), at(pivot)+scale*f.Hi*(x-pivot)
		return [3]float64{x, min(a, b), max(a, b)}
	}
	d.Band = [][3]float64{edge(lo), edge(pivot), edge(hi)}
	return d
}

// fitCaption is the line in words, its figures as the text table prints them.
func fitCaption(f DensityFit, unit string) string {
	if !finite(f.Fixed) || !finite(f.Marginal) {
		return "no line: it needs steps at two pod counts or more"
	}
	format := func(v float64) string { return output.MillicoresFixed(v, 2) }
	if unit == memUnit {
		format = func(v float64) string { return output.MiBFixed(v, 2) }
	}
	return fmt.Sprintf("%s at 0 pods, %s per pod [95%% CI %s, %s], R² %.2f, n = %d",
		format(f.Fixed), format(f.Marginal), format(f.Lo), format(f.Hi), f.R2, f.N)
}

// densityChart is a chart of kind scatterfit of one series, or false when every value is zero (the
// component used no CPU, or held no memory, at any step) or none was measured.
func densityChart(id, title, name, unit string, steps []DensityStep, s DensitySeries) (Chart, bool) {
	scale := 1.0
	if unit == memUnit {
		scale = mib
	}
	d := scatterFit(name, unit, steps, s, scale)
	some := false
	for _, p := range d.Points {
		some = some || p.Value != 0
	}
	return Chart{ID: id, Kind: "scatterfit", Title: title, Height: 340, Data: d}, some
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
