package htmlreport

import "fmt"

// DensityChurn is the churn phase of a density run (density.Churn): CPU per pod start, the pod's deletion
// included, per group, from pairs of a quiet and a churning window.
type DensityChurn struct {
	Rate     float64 // pod starts per second asked for
	Measured float64 // pod starts per second in the churning windows
	Base     int     // idle pods under both kinds of window
	Windows  int     // churning and quiet windows measured
	Rows     []DensityStartCost
}

// DensityStartCost is one group's CPU-milliseconds per pod start with its interval and p.
type DensityStartCost struct {
	Name        string
	N           int
	CPUms       float64
	Lo, Hi      float64
	Level, P    float64
	Significant bool
}

// densityChurnSection is the churn table.
func densityChurnSection(c DensityChurn) Section {
	t := Table{Caption: "CPU per pod start (churning minus quiet window of each trial, over its starts)",
		Head: []string{"group", "trials", "CPU-ms per start", "interval", "p"}, Right: []bool{false, true, true, true, true}}
	for _, r := range c.Rows {
		p := fmt.Sprintf("%.3g", r.P)
		if r.Significant {
			p += " *"
		}
		t.Rows = append(t.Rows, []string{r.Name, fmt.Sprint(r.N), fmt.Sprintf("%.1f", r.CPUms),
			fmt.Sprintf("[%.1f, %.1f] (%.0f%%)", r.Lo, r.Hi, 100*r.Level), p})
	}
	return Section{ID: "churn", Title: "Pod churn",
		Intro: fmt.Sprintf("%.2f pod starts a second asked, %.2f measured, over %d windows with %d idle pods running. Each group's extra CPU in the churning window over the quiet one of its trial, divided by the pods started per second: the Hodges–Lehmann estimate over the trials with its interval, p from the Wilcoxon signed-rank test (with fewer than six trials none can fall below 0.05).",
			c.Rate, c.Measured, c.Windows, c.Base),
		Tables: []Table{t}}
}
