package htmlreport

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// netRun is a net run as datapath would give it: tcp-stream at two sizes (host, host#2, and vxlan compared
// with host and with pod-cross-node, which only the 16k size has), tcp-rr at one.
func netRun() DatapathRun {
	stream := []DatapathFigure{{Name: "gbps", Title: "GBIT/S", Unit: "Gbit/s"}, {Name: "cpu_per_unit", Title: "CPU-s/Gbit", Unit: "CPU-s/Gbit"}}
	rr := []DatapathFigure{{Name: "transactions_per_s", Title: "RT/S", Unit: "1/s"}, {Name: "p50_us", Title: "P50 µs", Unit: "µs"}}
	return DatapathRun{DatapathHead: DatapathHead{Verb: "net", Lane: "path", Node: "vm", Baseline: "host", Alpha: 0.05, Sweep: "message size", Took: "1m2s",
		Setup: "4 round(s) of 2s trials in shuffled order (--seed 7), 1 stream(s)"},
		Groups: []DatapathGroup{
			{Name: "tcp-stream, 1k messages", Chart: "tcp-stream", Value: "1k", Figures: stream, Lanes: []DatapathLane{
				{Label: "host", Values: [][]float64{{3, 1, 2}, {0.5, 0.5, 0.5}}},
				{Label: "host#2", Values: [][]float64{{1, 2, 3, 10}, {0.4, 0.6, 0.5, 0.5}}, Ratios: []DatapathRatio{
					{Figure: "gbps", Against: "host", Ratio: 1.25, Lo: 0.8, Hi: 1.9, Level: 0.943, P: 0.4, MinP: 0.057, N: 4, NBase: 3},
				}},
			}},
			{Name: "tcp-stream, 16k messages", Chart: "tcp-stream", Value: "16k", Figures: stream, Lanes: []DatapathLane{
				{Label: "host", Values: [][]float64{{20, 22}, {0.1, 0.1}}},
				{Label: "pod-cross-node", Values: [][]float64{{9, 11}, {0.3, 0.3}}},
				{Label: "vxlan", Values: [][]float64{{4, 5}, {0.9, 1.1}}, Ratios: []DatapathRatio{
					{Figure: "gbps", Against: "host", Ratio: 0.21, Lo: 0.18, Hi: 0.25, Level: 0.968, P: 0.008, MinP: 0.008, Significant: true, N: 2, NBase: 2},
					{Figure: "gbps", Against: "pod-cross-node", Ratio: 0.45, Lo: 0.36, Hi: 0.56, Level: 0.968, P: 0.03, MinP: 0.008, Significant: true, N: 2, NBase: 2},
				}},
			}},
			{Name: "tcp-rr, 1k messages", Chart: "tcp-rr", Value: "1k", Figures: rr, Lanes: []DatapathLane{
				{Label: "host", Values: [][]float64{{30000}, {20}}},
				{Label: "host#2", Values: [][]float64{{31000}, {19}}, Ratios: []DatapathRatio{
					{Figure: "p50_us", Against: "host", Ratio: 0.95, Lo: 0.95, Hi: 0.95, Level: 0, P: 1, MinP: 1, N: 1, NBase: 1},
				}},
			}},
		},
		Trials: []DatapathTrial{
			{Seq: 1, Round: 1, Lane: "host", Group: 0, Values: []float64{3, 0.5}, NodeBusy: 1500},
			{Seq: 2, Round: 1, Lane: "vxlan", Group: 1, Error: "iperf3: connection refused"},
		},
	}
}

func chartsOfKind(p Page, kind string) []Chart {
	var out []Chart
	for _, s := range p.Sections {
		for _, c := range s.Charts {
			if c.Kind == kind {
				out = append(out, c)
			}
		}
	}
	return out
}

// TestDatapathRatios: a chart of kind ratios per mode and figure that has a comparison, each row the
// ratio, interval, p and counts given, named for its size where the mode has several and for what it is
// compared with where that is not the baseline.
func TestDatapathRatios(t *testing.T) {
	t.Parallel()
	p := Datapath(netRun(), "tare datapath net with this machine", "test")
	var got []ratiosData
	var titles []string
	for _, c := range chartsOfKind(p, "ratios") {
		got = append(got, c.Data.(ratiosData))
		titles = append(titles, c.Title)
	}
	want := []ratiosData{
		{Baseline: "host", Rows: []ratioRow{
			{Name: "host#2, 1k", Ratio: 1.25, Lo: 0.8, Hi: 1.9, Level: 0.943, P: 0.4, N: 4, NBase: 3, Against: "host"},
			{Name: "vxlan, 16k", Ratio: 0.21, Lo: 0.18, Hi: 0.25, Level: 0.968, P: 0.008, Significant: true, N: 2, NBase: 2, Against: "host"},
			{Name: "vxlan ÷ pod-cross-node, 16k", Ratio: 0.45, Lo: 0.36, Hi: 0.56, Level: 0.968, P: 0.03, Significant: true, N: 2, NBase: 2, Against: "pod-cross-node"},
		}},
		{Baseline: "host", Rows: []ratioRow{{Name: "host#2", Ratio: 0.95, Lo: 0.95, Hi: 0.95, P: 1, N: 1, NBase: 1, Against: "host"}}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ratio charts (-want +got):\n%s", diff)
	}
	// The stream's CPU and rr's transactions have no comparison: no chart.
	if diff := cmp.Diff([]string{"tcp-stream, GBIT/S: path ÷ host", "tcp-rr, P50 µs: path ÷ host"}, titles); diff != "" {
		t.Errorf("ratio chart titles (-want +got):\n%s", diff)
	}
}

// TestDatapathLines: a chart of kind lines for the mode with two sizes only: its first figure's median of
// each path's trials (the table's median: the mean of the middle two of an even count) from the lowest to
// the highest, null where the path has no trial at that size.
func TestDatapathLines(t *testing.T) {
	t.Parallel()
	p := Datapath(netRun(), "tare datapath net with this machine", "test")
	charts := chartsOfKind(p, "lines")
	if len(charts) != 1 {
		t.Fatalf("%d lines charts, want 1 (tcp-stream; tcp-rr has one size)", len(charts))
	}
	want := linesData{X: "message size", Unit: "Gbit/s", Categories: []string{"1k", "16k"}, Lines: []lineTrace{
		{Name: "host", Points: []*linePoint{{Median: 2, Lo: 1, Hi: 3, N: 3}, {Median: 21, Lo: 20, Hi: 22, N: 2}}},
		{Name: "host#2", Points: []*linePoint{{Median: 2.5, Lo: 1, Hi: 10, N: 4}, nil}},
		{Name: "pod-cross-node", Points: []*linePoint{nil, {Median: 10, Lo: 9, Hi: 11, N: 2}}},
		{Name: "vxlan", Points: []*linePoint{nil, {Median: 4.5, Lo: 4, Hi: 5, N: 2}}},
	}}
	if diff := cmp.Diff(want, charts[0].Data.(linesData)); diff != "" {
		t.Errorf("lines chart (-want +got):\n%s", diff)
	}
	if !strings.HasPrefix(charts[0].Title, "tcp-stream, GBIT/S against message size") || !strings.Contains(charts[0].Title, "lowest to the highest") {
		t.Errorf("title %q does not say the mode, figure and spread", charts[0].Title)
	}

	// Without a swept value (disk), two groups of one chart draw no lines.
	r := netRun()
	r.Sweep = ""
	if n := len(chartsOfKind(Datapath(r, "x", "test"), "lines")); n != 0 {
		t.Errorf("%d lines charts without a swept value", n)
	}
}

// TestDatapathTables: the figures tables hold each path's trial count, medians and ratio with its interval
// and p; the trials table every trial, the failed one with its error; the page renders.
func TestDatapathTables(t *testing.T) {
	t.Parallel()
	p := Datapath(netRun(), "tare datapath net with this machine", "test")
	if p.Thin != "" {
		t.Errorf("a run with finished trials is thin: %s", p.Thin)
	}
	var b bytes.Buffer
	if err := Write(&b, p); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	for _, want := range []string{
		"<td>vxlan</td><td class=\"num\">2</td><td class=\"num\">4.50</td><td class=\"num\">0.210 [0.180, 0.250]</td><td class=\"num\">0.008 *</td>",
		"<td>host#2</td><td class=\"num\">4</td><td class=\"num\">2.50</td><td class=\"num\">1.250 [0.800, 1.900]</td><td class=\"num\">0.4</td>",
		"tcp-stream, 1k messages (intervals at 94.3%)",
		"tcp-rr, 1k messages (intervals at 0.0%): with these few trials no p can fall below 1.000",
		"<td>iperf3: connection refused</td>",
		"GBIT/S 3.00, CPU-s/Gbit 0.5",
	} {
		if !strings.Contains(html, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
}

// TestDatapathThin: a run with no finished trial gives a page with a banner that says so and no chart; a
// run cut short says so.
func TestDatapathThin(t *testing.T) {
	t.Parallel()
	// What datapath gives when every trial failed: the lanes without values or ratios.
	failed := DatapathGroup{Name: "tcp-rr, 1k messages", Chart: "tcp-rr", Value: "1k", Figures: netRun().Groups[2].Figures,
		Lanes: []DatapathLane{{Label: "host", Values: [][]float64{{}, {}}}, {Label: "host#2", Values: [][]float64{{}, {}}}}}
	for _, c := range []struct {
		name string
		run  DatapathRun
		want string
	}{
		{"nothing", DatapathRun{DatapathHead: DatapathHead{Verb: "disk", Lane: "target", Baseline: "host"}}, "stopped before its first trial ended"},
		{"all failed", DatapathRun{DatapathHead: DatapathHead{Verb: "net", Lane: "path", Baseline: "host", Sweep: "message size"}, Groups: []DatapathGroup{failed, failed},
			Trials: []DatapathTrial{{Seq: 1, Lane: "host", Error: "sockperf: exit 1"}, {Seq: 2, Lane: "host#2", Error: "sockperf: exit 1"}}}, "all 2 failed"},
	} {
		r := c.run
		p := Datapath(r, "x", "test")
		if !strings.Contains(p.Thin, c.want) {
			t.Errorf("%s: banner %q, want it to say %q", c.name, p.Thin, c.want)
		}
		for _, s := range p.Sections {
			if len(s.Charts) > 0 {
				t.Errorf("%s: a chart in %q", c.name, s.Title)
			}
		}
		var b bytes.Buffer
		if err := Write(&b, p); err != nil || !strings.Contains(b.String(), c.want) {
			t.Errorf("%s: %v; the page lacks the banner", c.name, err)
		}
	}
	r := netRun()
	r.Cancelled = true
	if p := Datapath(r, "x", "test"); !strings.Contains(p.Thin, "cut short after 2 trial(s)") {
		t.Errorf("cancelled run's banner %q", p.Thin)
	}
}
