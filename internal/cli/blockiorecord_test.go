package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tare-dev/tare/internal/blockio"
	"github.com/tare-dev/tare/internal/htmlreport/browsertest"
	"github.com/tare-dev/tare/internal/record"
	"github.com/tare-dev/tare/internal/summary"
	"github.com/tare-dev/tare/internal/testenv"
	"github.com/tare-dev/tare/internal/testload"
)

// TestBlockIORecordReport: while tare measure --block-io --record --html runs, fio reads a file at random
// with direct I/O in a pod cgroup of its own. The pod's reads and bytes are fio's own (its JSON report)
// within 2%, and its device histogram counts each of them; tare report of the recording prints the very
// block I/O that measure printed, in JSON to the byte and in its table; and both HTML pages draw the
// pod's device time histogram in Chromium.
func TestBlockIORecordReport(t *testing.T) {
	requireTiming(t)
	testenv.NeedRoot(t, "tracing block I/O loads BPF programs; the pod cgroup is created")
	browsertest.Chromium(t)
	tr, err := blockio.Open(blockio.Options{})
	if errors.Is(err, blockio.ErrNotSupported) {
		testenv.Unavailable(t, "%v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	_ = tr.Close()
	const uid = "b10c1010-0000-4000-8000-00000000000b"
	fio := testload.StartFioPod(t, uid, "ctr0b10c100b", 2*time.Second)

	dir := t.TempDir()
	rec, measureHTML, reportHTML := filepath.Join(dir, "io.db"), filepath.Join(dir, "measure.html"), filepath.Join(dir, "report.html")
	type result struct {
		out, errOut string
		err         error
	}
	done := make(chan result, 1)
	go func() {
		out, errOut, err := run(context.Background(), "measure", "--duration", "8s", "--interval", "250ms", "--block-io",
			"--record", rec, "--html", measureHTML, "-o", "json")
		done <- result{out, errOut, err}
	}()
	// The window's block I/O starts at the baseline sample, read before the sample is recorded.
	waitRecorded(t, rec, 30*time.Second)
	reads := fio.Run(t)
	r := <-done
	if r.err != nil {
		t.Fatalf("measure: %v\n%s", r.err, r.errOut)
	}
	var measured struct {
		BlockIO json.RawMessage `json:"block_io"`
	}
	if err := json.Unmarshal([]byte(r.out), &measured); err != nil || measured.BlockIO == nil {
		t.Fatalf("measure's JSON has no block_io (%v); stderr:\n%s", err, r.errOut)
	}
	var b summary.BlockIO
	if err := json.Unmarshal(measured.BlockIO, &b); err != nil {
		t.Fatal(err)
	}
	var pod summary.BlockIOGroup
	for _, g := range b.Groups {
		if strings.Contains(g.Name, uid) {
			pod = g
		}
	}
	t.Logf("fio: %d reads, %d bytes; tare's %q: %d reads, %d bytes, %d in the device histogram, p50 %v, p99 %v",
		reads.Requests, reads.Bytes, pod.Name, pod.ReadRequests, pod.ReadBytes, pod.Device.Count(), pod.DeviceP50, pod.DeviceP99)
	for _, c := range []struct {
		what      string
		got, want uint64
	}{{"read requests", pod.ReadRequests, reads.Requests}, {"read bytes", pod.ReadBytes, reads.Bytes}} {
		if math.Abs(float64(c.got)-float64(c.want)) > 0.02*float64(c.want) || c.want == 0 {
			t.Errorf("%s: tare %d, fio %d: more than 2%% apart", c.what, c.got, c.want)
		}
	}
	if n := pod.Device.Count(); n != pod.ReadRequests+pod.WriteRequests || pod.DeviceP50 == nil {
		t.Errorf("the pod's device histogram counts %d requests, its counters %d reads and %d writes", n, pod.ReadRequests, pod.WriteRequests)
	}

	out, errOut, err := run(context.Background(), "report", rec, "-o", "json", "--html", reportHTML)
	if err != nil {
		t.Fatalf("report: %v\n%s", err, errOut)
	}
	var reported struct {
		BlockIO json.RawMessage `json:"block_io"`
	}
	if err := json.Unmarshal([]byte(out), &reported); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(measured.BlockIO), string(reported.BlockIO)); diff != "" {
		t.Errorf("report's block_io differs from measure's (-measure +report):\n%s", diff)
	}
	table, errOut, err := run(context.Background(), "report", rec)
	if err != nil {
		t.Fatalf("report: %v\n%s", err, errOut)
	}
	checkBlockIOTable(t, table, &b)

	for _, page := range []string{measureHTML, reportHTML} {
		p := htmlCheck(t, page, "busy", "hist")
		for _, c := range p.Charts {
			if c.Kind == "hist" && !strings.Contains(c.Text, pod.Name) {
				t.Errorf("%s: the block I/O histogram does not show %q: %q", filepath.Base(page), pod.Name, c.Text)
			}
		}
		if !strings.Contains(strings.Join(p.Headings, "|"), "Block I/O") {
			t.Errorf("%s: no Block I/O section: %v", filepath.Base(page), p.Headings)
		}
	}
}

// waitRecorded waits until the recording at path holds a sample.
func waitRecorded(t *testing.T, path string, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		r, err := record.Read(context.Background(), path)
		if err == nil && len(r.Samples) > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s, the recording %s holds no sample (%v)", limit, path, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// checkBlockIOTable checks that the block I/O table in a summary's table has a row per group of b, with
// its requests and percentiles, and the node's.
func checkBlockIOTable(t *testing.T, table string, b *summary.BlockIO) {
	t.Helper()
	i := strings.Index(table, "\nBLOCK I/O")
	if i < 0 {
		t.Fatalf("no block I/O table in:\n%s", table)
	}
	rows := strings.Split(table[i:], "\n")
	for _, g := range append(b.Groups[:min(20, len(b.Groups))], b.Total) {
		want := []string{g.Name + " ", fmt.Sprint(g.ReadRequests), fmt.Sprint(g.WriteRequests)}
		for _, q := range []*blockio.Quantile{g.DeviceP50, g.DeviceP99, g.QueueP99} {
			if q != nil {
				want = append(want, q.String())
			}
		}
		found := false
		for _, row := range rows {
			ok := strings.HasPrefix(row, want[0])
			for _, w := range want[1:] {
				ok = ok && strings.Contains(row, w)
			}
			found = found || ok
		}
		if !found {
			t.Errorf("the block I/O table has no row with %q:\n%s", want, table[i:])
		}
	}
}
