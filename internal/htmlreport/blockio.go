package htmlreport

import (
	"fmt"
	"math"
	"slices"

	"github.com/tare-dev/tare/internal/blockio"
	"github.com/tare-dev/tare/internal/output"
	"github.com/tare-dev/tare/internal/summary"
)

// histData is the chart input of kind hist: a bar per bucket and series, each series's share of its own
// count in each bucket, so that a group of ten requests and one of a million compare.
type histData struct {
	X       string       `json:"x"` // what the buckets are
	Buckets []string     `json:"buckets"`
	Series  []histSeries `json:"series"`
}

type histSeries struct {
	Name   string    `json:"name"`
	Counts []uint64  `json:"counts"` // per bucket
	Share  []float64 `json:"share"`  // per bucket, % of the series's count
}

// blockIOSection is the window's block I/O by group (summary.BlockIO): requests, bytes and percentiles in
// a table, and the device time of the busiest groups as histograms. ok is false without block I/O.
func blockIOSection(b *summary.BlockIO) (Section, bool) {
	if b == nil {
		return Section{}, false
	}
	intro := "Block I/O requests completed in the window, by the group of the process that made them (" + b.Source + "). " +
		"Buffered writes are made by the kernel's writeback threads and show under them, journal commits under jbd2. " +
		"Device time is from the request's issue to the driver to its completion; queue time from its creation to its issue. " +
		"Both are counted in log2 buckets of microseconds: a percentile is known to lie in its bucket, the estimate inside it assumes its requests spread evenly."
	if b.Unmatched > 0 || b.Dropped > 0 {
		intro += fmt.Sprintf(" Not in the figures: %d completions of requests the tracer did not see made, %d requests it had no room to count.", b.Unmatched, b.Dropped)
	}
	s := Section{ID: "block-io", Title: "Block I/O", Intro: intro}
	if len(b.Groups) == 0 {
		s.Items = []string{"No block I/O request completed in the window."}
		return s, true
	}
	t := Table{Caption: "Block I/O by group, busiest first, and the node's total",
		Head:  []string{"group", "kind", "reads", "read", "writes", "written", "device p50", "device p99", "queue p99"},
		Right: []bool{false, false, true, true, true, true, true, true, true}}
	for _, g := range slices.Concat(b.Groups, []summary.BlockIOGroup{b.Total}) {
		t.Rows = append(t.Rows, []string{g.Name, g.Kind, fmt.Sprint(g.ReadRequests), output.Bytes(float64(g.ReadBytes)),
			fmt.Sprint(g.WriteRequests), output.Bytes(float64(g.WriteBytes)), quantile(g.DeviceP50), quantile(g.DeviceP99), quantile(g.QueueP99)})
	}
	s.Tables = []Table{t}
	if d, ok := deviceHist(b.Groups); ok {
		s.Charts = []Chart{{ID: "chart-block-io", Kind: "hist", Title: "Device time per group", Height: 340, Data: d}}
	}
	return s, true
}

// quantile is a percentile as the text table gives it, "–" when there is none.
func quantile(q *blockio.Quantile) string {
	if q == nil {
		return "–"
	}
	return q.String()
}

// deviceHist is the device time histograms of the busiest groups (stackedGroups of them) that have any,
// over the buckets from the lowest to the highest any of them uses. ok is false when none has.
func deviceHist(groups []summary.BlockIOGroup) (histData, bool) {
	d := histData{X: "device time (log2 buckets)", Series: []histSeries{}}
	lo, hi := blockio.Slots, -1
	var shown []summary.BlockIOGroup
	for _, g := range groups {
		if len(shown) == stackedGroups {
			break
		}
		if g.Device.Count() == 0 {
			continue
		}
		shown = append(shown, g)
		for i, c := range g.Device {
			if c > 0 {
				lo, hi = min(lo, i), max(hi, i)
			}
		}
	}
	if len(shown) == 0 {
		return d, false
	}
	for i := lo; i <= hi; i++ {
		d.Buckets = append(d.Buckets, slotLabel(i))
	}
	for _, g := range shown {
		n := float64(g.Device.Count())
		hs := histSeries{Name: g.Name}
		for _, c := range g.Device[lo : hi+1] {
			hs.Counts = append(hs.Counts, c)
			hs.Share = append(hs.Share, 100*float64(c)/n)
		}
		d.Series = append(d.Series, hs)
	}
	return d, true
}

// slotLabel names a histogram slot by its bounds: "<1µs", "512µs–1.024ms", "≥17m53.741824s".
func slotLabel(i int) string {
	lo, hi := blockio.SlotBounds(i)
	switch {
	case lo == 0:
		return "<" + hi.String()
	case hi == math.MaxInt64:
		return "≥" + lo.String()
	}
	return lo.String() + "–" + hi.String()
}
