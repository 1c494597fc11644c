package htmlreport

import (
	"fmt"
	"time"

	gprofile "github.com/google/pprof/profile"

	"github.com/tare-dev/tare/internal/pprof"
	"github.com/tare-dev/tare/internal/profile"
)

// Profile is the report of tare profile: headline cards, a flame graph whose first level is tare's groups
// (grouped is the profile with each group as its stacks' root, profile.GroupedByGroup), and each group's
// top functions.
func Profile(sum profile.Summary, grouped *gprofile.Profile, version string) Page {
	p := Page{Title: "tare profile", Version: version, Made: time.Now(),
		Subtitle: fmt.Sprintf("%d samples of %s at %d Hz on %d CPUs over %.1f s", sum.Samples, sum.Event, sum.Frequency, sum.CPUs, sum.Seconds)}
	if sum.Samples == 0 {
		p.Thin = "No samples: the CPUs were idle, or the filter matched nothing."
	}
	p.Cards = append(p.Cards, Card{Label: "samples", Value: fmt.Sprint(sum.Samples), Detail: fmt.Sprintf("%d lost", sum.Lost)})
	if sum.SelfMillicores >= 0 {
		p.Cards = append(p.Cards, Card{Label: "tare's own cost", Value: fmt.Sprintf("%.1f mc", sum.SelfMillicores), Detail: "measured by the same session"})
	}
	fs := pprof.Summary{Frames: pprof.Frames(grouped)}
	s := Section{ID: "flame", Title: "Flame graph",
		Intro: "First level: tare's groups; above them each group's call stacks, callers below callees, width proportional to CPU. Hover a frame for its share."}
	if d, ok := flame(fs); ok {
		s.Charts = append(s.Charts, Chart{ID: "chart-flame-groups", Kind: "flame", Height: min(900, 40+18*(d.Depth+1)), Data: d})
	}
	p.Sections = append(p.Sections, s)
	for i, g := range sum.Groups {
		sec := Section{ID: fmt.Sprintf("group-%d", i), Title: g.Name,
			Intro: fmt.Sprintf("%d samples, %.1f millicores, %.1f%% of the node.", g.Samples, g.Millicores, g.NodePct)}
		t := Table{Caption: "Top functions by own CPU", Head: []string{"function", "own", "own %", "with callees %"}, Right: []bool{false, true, true, true}}
		for _, f := range g.Top {
			t.Rows = append(t.Rows, []string{f.Name, fmt.Sprintf("%.1f ms", f.FlatMs), fmt.Sprintf("%.1f%%", f.FlatPct), fmt.Sprintf("%.1f%%", f.CumPct)})
		}
		sec.Tables = append(sec.Tables, t)
		p.Sections = append(p.Sections, sec)
	}
	return p
}
