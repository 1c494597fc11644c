package htmlreport

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/tare-dev/tare/internal/compare"
	"github.com/tare-dev/tare/internal/explain"
	"github.com/tare-dev/tare/internal/summary"
)

// Text from the machine (a group or command named with markup) cannot end the page's scripts or add
// elements: tables escape it, the chart data carries it as \u003c.
func TestWriteEscapes(t *testing.T) {
	evil := "</script><script>alert(1)</script>"
	p := Page{Title: evil, Sections: []Section{{ID: "s", Title: "S", Tables: []Table{{Head: []string{"h"}, Rows: [][]string{{evil}}}},
		Charts: []Chart{{ID: "c", Kind: "bars", Height: 100, Data: barRows{Rows: []barRow{{Name: evil, Value: 1}}}}}}}}
	var b bytes.Buffer
	if err := Write(&b, p); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	if n := strings.Count(html, "</script>"); n != 3 { // ECharts, the data, report.js
		t.Errorf("%d </script> in the page, want the 3 of its own scripts", n)
	}
	if strings.Contains(html, "<script>alert(1)") || !strings.Contains(html, `\u003c/script\u003e`) {
		t.Errorf("markup from the data was not escaped")
	}
	if !strings.Contains(html, "Apache ECharts "+EChartsVersion) || strings.Contains(html, "src=\"http") {
		t.Errorf("the page does not inline ECharts, or loads something")
	}
}

func TestThin(t *testing.T) {
	at := time.Unix(1e9, 0)
	for _, c := range []struct {
		w         summary.Window
		interrupt bool
		want      string
	}{
		{summary.Window{}, false, "no samples"},
		{summary.Window{Start: at, End: at}, false, "single sample"},
		{summary.Window{Start: at, End: at.Add(3 * time.Second), Seconds: 3, Intervals: 3}, false, "only 3 interval(s)"},
		{summary.Window{Start: at, End: at.Add(60 * time.Second), Seconds: 60, Intervals: 60}, true, "interrupted"},
		{summary.Window{Start: at, End: at.Add(60 * time.Second), Seconds: 60, Intervals: 60}, false, ""},
	} {
		s := summary.Summary{Window: c.w}
		s.Meta.Interrupted = c.interrupt
		got := thin(s)
		if c.want == "" && got != "" || !strings.Contains(got, c.want) {
			t.Errorf("%+v: %q, want it to say %q", c.w, got, c.want)
		}
	}
	// A page of nothing at all still renders: the banner that says there are no samples, and no chart.
	empty := Node(explain.Report{}, "recording x.db", "test")
	if !strings.Contains(empty.Thin, "holds no samples") {
		t.Errorf("empty report's banner %q, want it to say the recording holds no samples", empty.Thin)
	}
	for _, s := range empty.Sections {
		if len(s.Charts) > 0 {
			t.Errorf("empty report has a chart in %q", s.Title)
		}
	}
	var b bytes.Buffer
	if err := Write(&b, empty); err != nil || !strings.Contains(b.String(), "holds no samples") {
		t.Errorf("empty report: %v; the page lacks the banner", err)
	}
	b.Reset()
	design := compare.Design{Name: "x", Variants: []string{"a", "b"}, Alpha: 0.05, Tolerance: 20}
	if err := Write(&b, Experiment(compare.Analyze(design, nil), "experiment x", "test")); err != nil || !strings.Contains(b.String(), "No trial has finished") {
		t.Errorf("experiment without trials: %v", err)
	}
}

func TestFiveNumbers(t *testing.T) {
	if got := fiveNumbers([]float64{5, 1, 4, 2, 3}); got != [5]float64{1, 2, 3, 4, 5} {
		t.Errorf("five numbers of 1..5: %v", got)
	}
	if got := fiveNumbers(nil); got != [5]float64{} {
		t.Errorf("of nothing: %v", got)
	}
}
