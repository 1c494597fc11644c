package htmlreport

import (
	"fmt"
	"strings"

	"github.com/tare-dev/tare/internal/audit"
	"github.com/tare-dev/tare/internal/explain"
	"github.com/tare-dev/tare/internal/output"
	"github.com/tare-dev/tare/internal/pprof"
)

// barRows is the chart input of kind bars.
type barRows struct {
	Unit string   `json:"unit"`
	Rows []barRow `json:"rows"`
}

type barRow struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
}

// apiSection is the API clients seen in the audit log, or the API server's request counters, or why
// there is neither.
func apiSection(api explain.API) (Section, bool) {
	s := Section{ID: "api", Title: "API clients"}
	switch {
	case api.Audit != nil:
		a := api.Audit
		s.Intro = fmt.Sprintf("From the audit log: %d requests in %.1f minutes (%.0f a minute), each counted once.", a.Requests, a.Minutes, a.PerMinute)
		if a.BadLines > 0 {
			s.Intro += fmt.Sprintf(" %d unreadable line(s) were skipped.", a.BadLines)
		}
		bars := barRows{Unit: "requests/min", Rows: []barRow{}}
		t := Table{Caption: "Clients", Head: []string{"client", "users", "requests", "per minute", "share", "errors"}, Right: []bool{false, false, true, true, true, true}}
		for i, c := range a.Clients {
			if i < 15 {
				bars.Rows = append(bars.Rows, barRow{Name: c.Name, Value: c.PerMinute})
			}
			t.Rows = append(t.Rows, []string{c.Name, strings.Join(c.Users, ", "), fmt.Sprint(c.Requests), fmt.Sprintf("%.1f", c.PerMinute),
				fmt.Sprintf("%.1f%%", c.SharePct), fmt.Sprint(c.Errors)})
		}
		if len(bars.Rows) > 0 {
			s.Charts = append(s.Charts, Chart{ID: "chart-api-clients", Kind: "bars", Title: "Requests per minute by client", Height: 60 + 24*len(bars.Rows), Data: bars})
		}
		s.Tables = append(s.Tables, t)
		if len(a.LeaderElection) > 0 {
			le := Table{Caption: "Leader-election lease renewals", Head: []string{"client", "lease", "renewals", "reads", "per minute"}, Right: []bool{false, false, true, true, true}}
			for _, l := range a.LeaderElection {
				le.Rows = append(le.Rows, []string{l.Client, l.Namespace + "/" + l.Name, fmt.Sprint(l.Renewals), fmt.Sprint(l.Reads), fmt.Sprintf("%.1f", l.PerMinute)})
			}
			s.Tables = append(s.Tables, le)
		}
		if len(a.Hot) > 0 {
			s.Tables = append(s.Tables, requestTable("Hot list and watch calls (a client polling, not watching)", a.Hot))
		}
		if len(a.Rows) > 0 {
			s.Tables = append(s.Tables, requestTable("Requests by client, verb and resource", a.Rows[:min(30, len(a.Rows))]))
		}
	case api.Metrics != nil:
		m := api.Metrics
		s.Intro = fmt.Sprintf("From the API server's apiserver_request_total before and after the window: %.0f requests in %.1f minutes (%.0f a minute). %s", m.Requests, m.Minutes, m.PerMinute, m.Missing)
		t := Table{Caption: "Requests by verb and resource", Head: []string{"verb", "resource", "requests", "per minute"}, Right: []bool{false, false, true, true}}
		for _, r := range m.Rows {
			t.Rows = append(t.Rows, []string{r.Verb, r.Resource, fmt.Sprintf("%.0f", r.Requests), fmt.Sprintf("%.1f", r.PerMinute)})
		}
		s.Tables = append(s.Tables, t)
	case api.Missing != "":
		s.Intro = api.Missing
	default:
		return Section{}, false
	}
	return s, true
}

func requestTable(caption string, rows []audit.Row) Table {
	t := Table{Caption: caption, Head: []string{"client", "verb", "resource", "namespace", "requests", "per minute"}, Right: []bool{false, false, false, false, true, true}}
	for _, r := range rows {
		t.Rows = append(t.Rows, []string{r.Client, r.Verb, r.Resource, r.Namespace, fmt.Sprint(r.Requests), fmt.Sprintf("%.1f", r.PerMinute)})
	}
	return t
}

// flameData is the chart input of kind flame: frames as [level, start ms, end ms, function].
type flameData struct {
	Total  float64 `json:"total"`
	Depth  int     `json:"depth"`
	Frames [][]any `json:"frames"`
}

// profileSections: one per profiled component, its top functions and its flame graph (callers at the
// bottom, callees above, width proportional to CPU).
func profileSections(rep explain.Report) []Section {
	var out []Section
	for i, p := range rep.Profiles {
		s := Section{ID: fmt.Sprintf("profile-%d", i), Title: "CPU profile: " + p.Component,
			Intro: fmt.Sprintf("%.0f ms of CPU in %.0f s (%s), %d samples, over the measured window. Flame graph: callers at the bottom, callees above, width proportional to CPU; hover a frame for its share.",
				p.TotalMs, p.Seconds, output.Millicores(p.Mc), p.Samples)}
		if d, ok := flame(p); ok {
			s.Charts = append(s.Charts, Chart{ID: fmt.Sprintf("chart-flame-%d", i), Kind: "flame", Height: min(900, 40+18*(d.Depth+1)), Data: d})
		}
		t := Table{Caption: "Top functions by own CPU", Head: []string{"function", "own", "own %", "with callees", "with callees %"}, Right: []bool{false, true, true, true, true}}
		for _, f := range p.Top {
			t.Rows = append(t.Rows, []string{f.Name, fmt.Sprintf("%.1f ms", f.FlatMs), fmt.Sprintf("%.1f%%", f.FlatPct), fmt.Sprintf("%.1f ms", f.CumMs), fmt.Sprintf("%.1f%%", f.CumPct)})
		}
		s.Tables = append(s.Tables, t)
		out = append(out, s)
	}
	return out
}

func flame(p pprof.Summary) (flameData, bool) {
	if len(p.Frames) == 0 {
		return flameData{}, false
	}
	d := flameData{Total: p.Frames[0].End - p.Frames[0].Start}
	for _, f := range p.Frames {
		d.Depth = max(d.Depth, f.Level)
		d.Frames = append(d.Frames, []any{f.Level, f.Start, f.End, f.Name})
	}
	return d, true
}
