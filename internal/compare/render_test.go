package compare

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
)

// TestJSONLeavesResults: JSON writes a cell without values (n = 0) as zeros, from a copy: the Results it
// was given keep their NaN median, so a renderer after it (the HTML report of -o json --html) sees them
// as they were, and a second JSON writes the same bytes.
func TestJSONLeavesResults(t *testing.T) {
	t.Parallel()
	d := Design{Name: "x", Variants: []string{"a", "b"}, Alpha: 0.05, Tolerance: 20}
	trials := []Trial{
		{Seq: 1, Variant: "a", Status: "ok", Metrics: map[string]float64{"node-busy": 120}},
		{Seq: 2, Variant: "a", Status: "ok", Metrics: map[string]float64{"node-busy": 130}},
		{Seq: 3, Variant: "b", Status: "planned"},
	}
	r := Analyze(d, trials)
	empty := r.Rows[0].Cells[1]
	if empty.Median.N != 0 || !math.IsNaN(empty.Median.Median) {
		t.Fatalf("b's cell: %+v, want n = 0 and a NaN median", empty)
	}
	var first, second bytes.Buffer
	if err := r.JSON(&first); err != nil {
		t.Fatal(err)
	}
	if m := r.Rows[0].Cells[1].Median; !math.IsNaN(m.Median) || !math.IsNaN(m.Lo) || !math.IsNaN(m.Hi) {
		t.Errorf("JSON changed the results: b's median is now %+v", m)
	}
	if err := r.JSON(&second); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first.Bytes(), second.Bytes()) {
		t.Errorf("two JSON of the same results differ:\n%s\n%s", first.String(), second.String())
	}
	var back Results
	if err := json.Unmarshal(first.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	a, b := back.Rows[0].Cells[0].Median, back.Rows[0].Cells[1].Median
	if a.N != 2 || a.Median != r.Rows[0].Cells[0].Median.Median || b.N != 0 || b.Median != 0 || b.Lo != 0 || b.Hi != 0 {
		t.Errorf("JSON medians: a %+v (want the analysis's %v), b %+v (want zeros)", a, r.Rows[0].Cells[0].Median.Median, b)
	}
}
