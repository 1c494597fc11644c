package audit

import (
	"bytes"
	"math"
	"os"
	"testing"
)

// FuzzParseRequestTotals feeds the /metrics reader text seeded with a scrape of the lab's kube-apiserver
// (testdata/apiserver_metrics.txt: apiserver_request_total and a gauge, a histogram and a summary from
// the same scrape). What it accepts must give counts Delta can use.
func FuzzParseRequestTotals(f *testing.F) {
	b, err := os.ReadFile("testdata/apiserver_metrics.txt")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	lines := bytes.SplitAfter(b, []byte("\n"))
	f.Add(bytes.Join(lines[:8], nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		totals, err := ParseRequestTotals(bytes.NewReader(b))
		if err != nil {
			return
		}
		for k, v := range totals {
			if k[1] == "" {
				t.Fatalf("a count %v with no resource name", v)
			}
		}
		rep := Delta(RequestTotals{}, totals, 1)
		if math.IsNaN(rep.PerMinute) {
			t.Fatalf("rate NaN from %v", totals)
		}
	})
}
