package htmlreport

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tare-dev/tare/internal/blockio"
	"github.com/tare-dev/tare/internal/explain"
	"github.com/tare-dev/tare/internal/htmlreport/browsertest"
	"github.com/tare-dev/tare/internal/sample"
	"github.com/tare-dev/tare/internal/summary"
)

// blockIOReport is the report of a two-sample window with two processes (etcd, a database pod) and a
// block I/O snapshot: the database's reads in [32, 64) µs and a tail in [1.024, 2.048) ms, etcd's writes
// in [512, 1024) µs, a dd tare never saw, a flush of no bytes, and requests the tracer did not see made.
func blockIOReport(t testing.TB) explain.Report {
	t.Helper()
	at := time.Unix(1_700_000_000, 0)
	samples := []sample.Sample{
		{Seq: 0, Time: at, New: []sample.ProcInfo{
			{ID: 1, Key: sample.ProcKey{PID: 100}, Comm: "etcd", Group: "etcd", GroupKind: "component", Seen: true},
			{ID: 2, Key: sample.ProcKey{PID: 200}, Comm: "postgres", Group: "pod db/postgres-0", GroupKind: "pod", Seen: true}}},
		{Seq: 1, Time: at.Add(time.Second), Elapsed: time.Second},
	}
	hist := func(slots ...uint64) blockio.Histogram {
		var h blockio.Histogram
		for i := 0; i+1 < len(slots); i += 2 {
			h[slots[i]] = slots[i+1]
		}
		return h
	}
	snap := &blockio.Snapshot{Unmatched: 4, Records: []blockio.Record{
		{Key: blockio.Key{PID: 100, Dir: blockio.Write}, Comm: "etcd", Requests: 10, Bytes: 40960, Device: hist(10, 10), Queue: hist(2, 10)},
		{Key: blockio.Key{PID: 100, Dir: blockio.Other}, Comm: "etcd", Requests: 10, Device: hist(8, 10), Queue: hist(1, 10)},
		{Key: blockio.Key{PID: 200, Dir: blockio.Read}, Comm: "postgres", Requests: 100, Bytes: 100 * 8192, Device: hist(6, 90, 11, 10), Queue: hist(1, 100)},
		{Key: blockio.Key{PID: 300, Dir: blockio.Read}, Comm: "dd", Requests: 1, Bytes: 4096, Device: hist(7, 1), Queue: hist(1, 1)},
	}}
	sum := summary.Build(sample.Meta{Host: "vm", CPUs: 2, Interval: time.Second}, samples, summary.Options{BlockIO: snap})
	return explain.New(samples, sum, explain.API{}, nil, nil)
}

func sectionOf(p Page, id string) (Section, bool) {
	for _, s := range p.Sections {
		if s.ID == id {
			return s, true
		}
	}
	return Section{}, false
}

// TestBlockIOSection: the block I/O section has a row per group, busiest first, and the node's total, each
// with its requests, bytes and percentiles as the text table gives them; and a chart of the groups' device
// time over the buckets from the lowest to the highest used, each bar a share of its group's requests. A
// window without block I/O has no section.
func TestBlockIOSection(t *testing.T) {
	t.Parallel()
	rep := blockIOReport(t)
	s, ok := sectionOf(Node(rep, "recording x.db", "test"), "block-io")
	if !ok {
		t.Fatal("no block I/O section")
	}
	if len(s.Tables) != 1 {
		t.Fatalf("%d tables", len(s.Tables))
	}
	want := [][]string{
		{"pod db/postgres-0", "pod", "100", "800.0KiB", "0", "0B", "~49.6µs in [32µs, 64µs)", "~1.8944ms in [1.024ms, 2.048ms)", "~1.985µs in [1µs, 2µs)"},
		{"etcd", "component", "0", "0B", "10", "40.0KiB", "~249.6µs in [128µs, 256µs)", "~998.4µs in [512µs, 1.024ms)", "~3.9µs in [2µs, 4µs)"},
		{"other (dd)", "other", "1", "4.0KiB", "0", "0B", "~96µs in [64µs, 128µs)", "~96µs in [64µs, 128µs)", "~1.5µs in [1µs, 2µs)"},
		{"node", "", "101", "804.0KiB", "10", "40.0KiB", "~53.511µs in [32µs, 64µs)", "~1.8944ms in [1.024ms, 2.048ms)", "~3.7µs in [2µs, 4µs)"},
	}
	if diff := cmp.Diff(want, s.Tables[0].Rows); diff != "" {
		t.Errorf("table (-want +got):\n%s", diff)
	}
	if !strings.Contains(s.Intro, "4 completions of requests the tracer did not see made") {
		t.Errorf("intro does not say what the figures leave out: %s", s.Intro)
	}
	if len(s.Charts) != 1 || s.Charts[0].Kind != "hist" {
		t.Fatalf("charts %+v", s.Charts)
	}
	d := s.Charts[0].Data.(histData)
	wantBuckets := []string{"32µs–64µs", "64µs–128µs", "128µs–256µs", "256µs–512µs", "512µs–1.024ms", "1.024ms–2.048ms"}
	if diff := cmp.Diff(wantBuckets, d.Buckets); diff != "" {
		t.Errorf("buckets (-want +got):\n%s", diff)
	}
	wantSeries := []histSeries{
		{Name: "pod db/postgres-0", Counts: []uint64{90, 0, 0, 0, 0, 10}, Share: []float64{90, 0, 0, 0, 0, 10}},
		{Name: "etcd", Counts: []uint64{0, 0, 10, 0, 10, 0}, Share: []float64{0, 0, 50, 0, 50, 0}},
		{Name: "other (dd)", Counts: []uint64{0, 1, 0, 0, 0, 0}, Share: []float64{0, 100, 0, 0, 0, 0}},
	}
	if diff := cmp.Diff(wantSeries, d.Series); diff != "" {
		t.Errorf("series (-want +got):\n%s", diff)
	}

	rep.Summary.BlockIO = nil
	if _, ok := sectionOf(Node(rep, "recording x.db", "test"), "block-io"); ok {
		t.Error("a block I/O section without block I/O")
	}
	rep.Summary.BlockIO = &summary.BlockIO{Source: "BPF"}
	if s, ok := sectionOf(Node(rep, "recording x.db", "test"), "block-io"); !ok || len(s.Charts)+len(s.Tables) != 0 || len(s.Items) != 1 {
		t.Errorf("a window traced without any block I/O: %+v", s)
	}
}

func TestSlotLabel(t *testing.T) {
	t.Parallel()
	for i, want := range map[int]string{0: "<1µs", 1: "1µs–2µs", 10: "512µs–1.024ms", blockio.Slots - 1: "≥17m53.741824s"} {
		if got := slotLabel(i); got != want {
			t.Errorf("slot %d: %q, want %q", i, got, want)
		}
	}
}

// TestBlockIOPage: Chromium draws the block I/O histogram, a bar per group and bucket with the groups in
// its legend, beside the table, without errors.
func TestBlockIOPage(t *testing.T) {
	browsertest.Chromium(t)
	var b bytes.Buffer
	if err := Write(&b, Node(blockIOReport(t), "recording x.db", "test")); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "blockio.html")
	if err := os.WriteFile(path, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	p := browsertest.Open(t, path)
	browsertest.Check(t, p)
	var hist *browsertest.Chart
	for i, c := range p.Charts {
		if c.Kind == "hist" {
			hist = &p.Charts[i]
		}
	}
	if hist == nil {
		t.Fatalf("no hist chart: %+v", p.Charts)
	}
	for _, name := range []string{"pod db/postgres-0", "etcd", "other (dd)", "512µs–1.024ms"} {
		if !strings.Contains(hist.Text, name) {
			t.Errorf("the histogram does not show %q: %q", name, hist.Text)
		}
	}
	// 3 groups with 6 buckets each: a bar for each non-empty one, 4 of them, besides the axes and legend.
	if _, hues := browsertest.Ink(p.Shot, *hist); hist.Shapes < 10 || hues < 3 {
		t.Errorf("the histogram has %d shapes in %d colours, want the 3 groups' bars", hist.Shapes, hues)
	}
	if !strings.Contains(strings.Join(p.Headings, "|"), "Block I/O") {
		t.Errorf("no Block I/O heading: %v", p.Headings)
	}
}
