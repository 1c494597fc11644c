package htmlreport

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/tare-dev/tare/internal/compare"
	"github.com/tare-dev/tare/internal/record"
)

// readFixture reads a recording of internal/cli/testdata from a copy, so the reader's -shm and -wal files
// land in a temporary directory.
func readFixture(t *testing.T, name string) record.Recording {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "cli", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	rec, err := record.Read(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// sweepResults are an interrupted sweep over two recordings of real machines (cli's golden fixtures: an
// ls loop, then a quarter-core burner), one block of 1 s per trial: the third value has only planned
// trials, so its cells have no values (n = 0, a NaN median), which JSON writes as zeros.
func sweepResults(t *testing.T) compare.Results {
	t.Helper()
	diff, err := compare.Diff(readFixture(t, "recording.db"), readFixture(t, "burner.db"), "ls", "burner", time.Second, 0.05)
	if err != nil {
		t.Fatal(err)
	}
	trials := diff.Trials
	for i := range 2 {
		trials = append(trials, compare.Trial{Seq: len(trials) + 1, Round: i + 1, Variant: "later", Status: "planned"})
	}
	d := compare.Design{Name: "sweep", Variants: []string{"ls", "burner", "later"}, Alpha: 0.05, Primary: "node-busy", Tolerance: 20,
		Sweep: &compare.Sweep{Flag: "etcd.snapshot-count", Values: compare.Values{"ls", "burner", "later"}}}
	return compare.Analyze(d, trials)
}

// TestExperimentHTMLAfterJSON: `-o json --html` renders the JSON, then the page, from the same Results.
// Writing the JSON leaves the Results as they were (the empty cells keep their NaN median), and the page's
// table, sweep and distribution data are the numbers the JSON holds: non-zero where the JSON's are.
func TestExperimentHTMLAfterJSON(t *testing.T) {
	t.Parallel()
	res, untouched := sweepResults(t), sweepResults(t)
	var js bytes.Buffer
	if err := res.JSON(&js); err != nil {
		t.Fatal(err)
	}
	sameNum := cmp.Comparer(func(a, b compare.Num) bool { return a == b || math.IsNaN(float64(a)) && math.IsNaN(float64(b)) })
	if diff := cmp.Diff(untouched, res, cmpopts.EquateNaNs(), sameNum); diff != "" {
		t.Fatalf("writing the JSON changed the results (-before +after):\n%s", diff)
	}
	var page bytes.Buffer
	if err := Write(&page, Experiment(res, "experiment sweep", "test")); err != nil {
		t.Fatal(err)
	}
	var fromJSON compare.Results
	if err := json.Unmarshal(js.Bytes(), &fromJSON); err != nil {
		t.Fatalf("the JSON does not read back: %v", err)
	}
	html := page.String()

	// The results table: each cell's median as the JSON has it.
	for _, row := range fromJSON.Rows {
		for _, c := range row.Cells {
			if want := compare.MedianText(c); !strings.Contains(html, "<td>"+want+"</td>") && !strings.Contains(html, ">"+want+"</td>") {
				t.Errorf("%s of %s: the page's table lacks the JSON's median %q", row.Metric, c.Variant, want)
			}
		}
	}

	charts := chartData(t, html)
	// The sweep: one point per value with trials, at the JSON's median and interval.
	var sweep sweepData
	if err := json.Unmarshal(charts["chart-sweep"], &sweep); err != nil {
		t.Fatalf("sweep chart: %v", err)
	}
	var primary compare.Row
	for _, row := range fromJSON.Rows {
		if row.Metric == fromJSON.Primary {
			primary = row
		}
	}
	var want []sweepPoint
	for _, c := range primary.Cells {
		if c.Median.N > 0 {
			want = append(want, sweepPoint{Value: c.Variant, Median: c.Median.Median, Lo: c.Median.Lo, Hi: c.Median.Hi, Significant: c.Shift != nil && c.Shift.Significant})
		}
	}
	if len(want) != 2 {
		t.Fatalf("the JSON's %s row has %d values with trials, want 2: %+v", fromJSON.Primary, len(want), primary.Cells)
	}
	if diff := cmp.Diff(want, sweep.Points); diff != "" {
		t.Errorf("sweep points differ from the JSON's medians (-json +page):\n%s", diff)
	}
	// Each point's median from the trials' raw values, sorted here, not from the analysis.
	for _, p := range sweep.Points {
		var vals []float64
		for _, tr := range fromJSON.Trials {
			if tr.Variant == p.Value && tr.Status == "ok" {
				vals = append(vals, tr.Metrics[fromJSON.Primary])
			}
		}
		slices.Sort(vals)
		if len(vals) == 0 {
			t.Errorf("sweep point %s has no trials", p.Value)
			continue
		}
		median := (vals[(len(vals)-1)/2] + vals[len(vals)/2]) / 2
		if math.Abs(p.Median-median) > 1e-9*math.Abs(median) || p.Lo > median || p.Hi < median || median == 0 {
			t.Errorf("sweep point %s: %+v, want the median %g of its %d trials %v inside [lo, hi]", p.Value, p, median, len(vals), vals)
		}
	}

	// The distributions: each variant's dots are its trials' values in the JSON.
	var dist boxData
	if err := json.Unmarshal(charts["chart-dist-0"], &dist); err != nil {
		t.Fatalf("distribution chart: %v", err)
	}
	for _, v := range dist.Variants {
		wantValues := []float64{}
		for _, tr := range fromJSON.Trials {
			if tr.Variant == v.Name && tr.Status == "ok" {
				wantValues = append(wantValues, tr.Metrics[fromJSON.Primary])
			}
		}
		if diff := cmp.Diff(wantValues, v.Values); diff != "" {
			t.Errorf("%s's dots differ from the JSON's trials (-json +page):\n%s", v.Name, diff)
		}
		// The box's whiskers are the trials' smallest and largest values.
		if len(wantValues) > 0 && (v.Box[0] != slices.Min(wantValues) || v.Box[4] != slices.Max(wantValues) || v.Box[4] == 0) {
			t.Errorf("%s's box %v, want it from %g to %g", v.Name, v.Box, slices.Min(wantValues), slices.Max(wantValues))
		}
	}
}

// chartData is each chart's data in the page, by chart id.
func chartData(t *testing.T, html string) map[string]json.RawMessage {
	t.Helper()
	m := regexp.MustCompile(`const TARE = (.*);</script>`).FindStringSubmatch(html)
	if m == nil {
		t.Fatal("the page has no chart data")
	}
	var data struct {
		Charts []struct {
			ID   string          `json:"id"`
			Data json.RawMessage `json:"data"`
		} `json:"charts"`
	}
	if err := json.Unmarshal([]byte(m[1]), &data); err != nil {
		t.Fatalf("chart data: %v", err)
	}
	out := map[string]json.RawMessage{}
	for _, c := range data.Charts {
		out[c.ID] = c.Data
	}
	return out
}

// TestExperimentHTMLSequential: a sequential analysis of two real recordings (an ls loop, then a
// quarter-core burner; 1 s blocks paired by position as rounds) shows its plan and one row per look, with
// the z and bound the JSON holds.
func TestExperimentHTMLSequential(t *testing.T) {
	t.Parallel()
	diff, err := compare.Diff(readFixture(t, "recording.db"), readFixture(t, "burner.db"), "ls", "burner", time.Second, 0.05)
	if err != nil {
		t.Fatal(err)
	}
	plan := &compare.Plan{MDEPct: 5, Base: 100, Sigma: 20, MaxRounds: 10, FirstLook: 3, Inflation: 1.03, Pilot: "a test"}
	res := compare.Analyze(compare.Design{Name: "seq", Variants: []string{"ls", "burner"}, Alpha: 0.05, Primary: "node-busy", Tolerance: 20, Plan: plan}, diff.Trials)
	if len(res.Sequential) != 1 || len(res.Sequential[0].Looks) == 0 {
		t.Fatalf("sequential answers %+v", res.Sequential)
	}
	var page bytes.Buffer
	if err := Write(&page, Experiment(res, "experiment seq", "test")); err != nil {
		t.Fatal(err)
	}
	html := page.String()
	if !strings.Contains(html, "Sequential test") || !strings.Contains(html, "Lan–DeMets") {
		t.Error("the page has no sequential section")
	}
	for _, l := range res.Sequential[0].Looks {
		if z := strings.ReplaceAll(fmt.Sprintf("%+.2f", float64(l.Z)), "+", "&#43;"); !strings.Contains(html, ">"+z+"</td>") { // html/template escapes +
			t.Errorf("look at round %d: the page lacks z %s", l.Round, z)
		}
	}
}
