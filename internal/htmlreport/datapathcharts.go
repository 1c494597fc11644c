package htmlreport

import (
	"fmt"
	"slices"

	"github.com/tare-dev/tare/internal/stats"
)

// ratiosData is the chart input of kind ratios: a row per comparison, each a ratio with its interval.
type ratiosData struct {
	Baseline string     `json:"baseline"`
	Rows     []ratioRow `json:"rows"` // top to bottom
}

type ratioRow struct {
	Name        string  `json:"name"`
	Ratio       float64 `json:"ratio"`
	Lo          float64 `json:"lo"`
	Hi          float64 `json:"hi"`
	Level       float64 `json:"level"`
	P           float64 `json:"p"`
	Significant bool    `json:"significant"`
	N           int     `json:"n"`
	NBase       int     `json:"n_base"`
	Against     string  `json:"against"`
}

// linesData is the chart input of kind lines: a figure against categories in order, a line per name.
type linesData struct {
	X          string      `json:"x"` // what the categories are
	Unit       string      `json:"unit"`
	Categories []string    `json:"categories"`
	Lines      []lineTrace `json:"lines"`
}

type lineTrace struct {
	Name   string       `json:"name"`
	Points []*linePoint `json:"points"` // per category; null where the lane has no finished trial
}

// linePoint is a median with the spread of the values it is the median of.
type linePoint struct {
	Median float64 `json:"median"`
	Lo     float64 `json:"lo"` // the lowest value
	Hi     float64 `json:"hi"` // the highest
	N      int     `json:"n"`
}

// chartsOf splits the groups by their Chart, in the order the charts first appear.
func chartsOf(groups []DatapathGroup) (keys []string, by map[string][]DatapathGroup) {
	by = map[string][]DatapathGroup{}
	for _, g := range groups {
		if _, ok := by[g.Chart]; !ok {
			keys = append(keys, g.Chart)
		}
		by[g.Chart] = append(by[g.Chart], g)
	}
	return keys, by
}

// ratioCharts are a chart of kind ratios per Chart and figure: a row per lane and comparison, in the
// groups' order; a row names its group's Value when the chart holds several groups, and the lane it is
// compared with when that is not the baseline. Charts without a comparison are left out.
func ratioCharts(r DatapathRun) []Chart {
	var out []Chart
	keys, by := chartsOf(r.Groups)
	for _, k := range keys {
		gs := by[k]
		for _, f := range gs[0].Figures {
			d := ratiosData{Baseline: r.Baseline}
			for _, g := range gs {
				for _, l := range g.Lanes {
					for _, q := range l.Ratios {
						if q.Figure != f.Name {
							continue
						}
						name := l.Label
						if q.Against != r.Baseline {
							name += " ÷ " + q.Against
						}
						if len(gs) > 1 {
							name += ", " + g.Value
						}
						d.Rows = append(d.Rows, ratioRow{Name: name, Ratio: q.Ratio, Lo: q.Lo, Hi: q.Hi, Level: q.Level, P: q.P, Significant: q.Significant,
							N: q.N, NBase: q.NBase, Against: q.Against})
					}
				}
			}
			if len(d.Rows) == 0 {
				continue
			}
			title := fmt.Sprintf("%s: %s ÷ %s", f.Title, r.Lane, r.Baseline)
			if k != "" {
				title = k + ", " + title
			}
			out = append(out, Chart{Kind: "ratios", Title: title, Height: 70 + 30*len(d.Rows), Data: d})
		}
	}
	return out
}

// lineCharts are a chart of kind lines per Chart of two or more groups, when the run sweeps a value: the
// Chart's first figure (its main one) against the groups' Values, a line per lane through the medians of
// its trials, with bars from the lowest trial to the highest.
func lineCharts(r DatapathRun) []Chart {
	if r.Sweep == "" {
		return nil
	}
	var out []Chart
	keys, by := chartsOf(r.Groups)
	for _, k := range keys {
		gs := by[k]
		if len(gs) < 2 || len(gs[0].Figures) == 0 {
			continue
		}
		f := gs[0].Figures[0]
		d := linesData{X: r.Sweep, Unit: f.Unit}
		var names []string
		for _, g := range gs {
			d.Categories = append(d.Categories, g.Value)
			for _, l := range g.Lanes {
				if !slices.Contains(names, l.Label) {
					names = append(names, l.Label)
				}
			}
		}
		drawn := false
		for _, name := range names {
			line := lineTrace{Name: name, Points: make([]*linePoint, len(gs))}
			for i, g := range gs {
				for _, l := range g.Lanes {
					if l.Label == name && len(l.Values) > 0 && len(l.Values[0]) > 0 {
						line.Points[i] = pointOf(l.Values[0])
						drawn = true
					}
				}
			}
			d.Lines = append(d.Lines, line)
		}
		if !drawn {
			continue
		}
		title := fmt.Sprintf("%s against %s (median of each %s's trials, bars from the lowest to the highest)", f.Title, r.Sweep, r.Lane)
		if k != "" {
			title = k + ", " + title
		}
		out = append(out, Chart{Kind: "lines", Title: title, Height: 360, Data: d})
	}
	return out
}

// pointOf is the median of xs (one or more; the table's, stats.MedianOf) with their extremes.
func pointOf(xs []float64) *linePoint {
	return &linePoint{Median: stats.MedianOf(xs), Lo: slices.Min(xs), Hi: slices.Max(xs), N: len(xs)}
}
