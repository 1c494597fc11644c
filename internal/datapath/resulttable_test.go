package datapath

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tare-dev/tare/internal/htmlreport"
)

// handResult is a result built by hand: two lanes of one group, the second at twice the first's rate,
// significantly, and with a figure the table shows without its ratio.
func handResult() Result {
	return Result{DatapathHead: htmlreport.DatapathHead{Verb: "x", Lane: "place", Node: "n1", Baseline: "a", Setup: "2 round(s)", Took: "1s"}, WorkUnit: "op",
		Failed: "#3 b g1: broke",
		Groups: []Group{{Name: "g1 (big)", Subject: "g1", Versus: "a",
			Figures: []FigureHead{{Name: "rate", Title: "RATE"}, {Name: "bytes", Title: "BYTES", NoRatio: true}},
			Lanes: []LaneRow{
				{Label: "a", N: 2, Values: [][]float64{{10, 30}, {1, 3}}},
				{Label: "b", N: 1, Values: [][]float64{{40}, {4}}},
			}}},
		Comparisons: []Comparison{
			{Lane: "b", Against: "a", Subject: "g1", Metric: "rate", Baseline: true, Words: "rate",
				Shift: Shift{N: 1, NBase: 2, Median: 40, Base: 20, Ratio: 2, Lo: 1.5, Hi: 2.5, Level: 0.9, P: 0.01, Significant: true}},
			{Lane: "b", Against: "a", Subject: "g1", Metric: "cpu", Baseline: true, PerWork: "op",
				Shift: Shift{Median: 3, Base: 2, Ratio: 1.5, P: 0.5}},
		}}
}

// TestWriteTable: the head, the failed trials, the group with its level and a ratio only where the
// result has one, and the words with the CPU per unit of work; no CPU section without CPU rows.
func TestWriteTable(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	if err := WriteTable(&b, handResult()); err != nil {
		t.Fatal(err)
	}
	want := "Node n1: 2 round(s), took 1s\n" +
		"Failed trials (left out): #3 b g1: broke\n" +
		"\n" +
		"g1 (big) (ratios: place ÷ a, Hodges–Lehmann with its 90.0% interval; p: Mann–Whitney, * below 0.05)\n" +
		"PLACE  N  RATE   vs a                  p       BYTES\n" +
		"a      2  20.00  —                             2.00\n" +
		"b      1  40.00  2.000 [1.500, 2.500]  0.01 *  4.00\n" +
		"\n" +
		"In words (node CPU per op, the node's own idle work included; each p is one comparison's):\n" +
		"  b against a, g1: +100.0% rate [+50.0%, +150.0%], p = 0.01; +1 CPU-s per op (+50.0%, not significant)\n"
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("table (-want +got):\n%s", diff)
	}
}

// TestResultView: the page gets each lane's values and every comparison of it, and the table's notes.
func TestResultView(t *testing.T) {
	t.Parallel()
	r := handResult()
	r.Skipped = []string{"c: not asked"}
	v := r.View()
	if len(v.Groups) != 1 || len(v.Groups[0].Lanes) != 2 || v.Groups[0].Figures[1].Title != "BYTES" {
		t.Fatalf("groups %+v", v.Groups)
	}
	if b := v.Groups[0].Lanes[1]; b.Label != "b" || len(b.Ratios) != 2 || b.Ratios[0].Figure != "rate" || b.Ratios[0].Ratio != 2 {
		t.Errorf("lane b %+v", b)
	}
	want := []string{"Not measured: c: not asked", "Failed trials (left out): #3 b g1: broke"}
	if diff := cmp.Diff(want, v.Notes); diff != "" {
		t.Errorf("notes (-want +got):\n%s", diff)
	}
}
