package summary

import (
	"bytes"
	"strings"
	"testing"

	"github.com/tare-dev/tare/internal/blockio"
	"github.com/tare-dev/tare/internal/sample"
)

// TestBuildBlockIO: records are charged to the group of their PID, a PID tare never saw to "other (comm)";
// the node's total adds every record up, its percentiles come from the merged histograms, and the table
// lists the busiest group first.
func TestBuildBlockIO(t *testing.T) {
	t.Parallel()
	procs := map[int64]*procAcc{
		1: {info: sample.ProcInfo{ID: 1, Key: sample.ProcKey{PID: 100}, Group: "etcd", GroupKind: "component"}},
		2: {info: sample.ProcInfo{ID: 2, Key: sample.ProcKey{PID: 200}, Group: "pod ns/db", GroupKind: "pod"}},
	}
	hist := func(slot int, n uint64) blockio.Histogram {
		var h blockio.Histogram
		h[slot] = n
		return h
	}
	snap := &blockio.Snapshot{Unmatched: 3, Records: []blockio.Record{
		{Key: blockio.Key{PID: 100, Dir: blockio.Write}, Comm: "etcd", Requests: 10, Bytes: 40960, Device: hist(10, 10), Queue: hist(2, 10)},
		{Key: blockio.Key{PID: 200, Dir: blockio.Read}, Comm: "postgres", Requests: 90, Bytes: 90 * 8192, Device: hist(6, 90), Queue: hist(1, 90)},
		{Key: blockio.Key{PID: 200, Dir: blockio.Write}, Comm: "postgres", Requests: 5, Bytes: 5 * 4096, Device: hist(9, 5), Queue: hist(1, 5)},
		{Key: blockio.Key{PID: 300, Dir: blockio.Read}, Comm: "dd", Requests: 1, Bytes: 4096, Device: hist(6, 1), Queue: hist(1, 1)},
	}}
	b := buildBlockIO(snap, procs)
	if len(b.Groups) != 3 || b.Groups[0].Name != "pod ns/db" || b.Groups[1].Name != "etcd" || b.Groups[2].Name != "other (dd)" {
		t.Fatalf("groups %+v", b.Groups)
	}
	db, total := b.Groups[0], b.Total
	if db.ReadRequests != 90 || db.ReadBytes != 90*8192 || db.WriteRequests != 5 || db.WriteBytes != 5*4096 {
		t.Errorf("pod ns/db: %+v", db)
	}
	if total.ReadRequests != 91 || total.WriteRequests != 15 || total.WriteBytes != 40960+5*4096 || b.Unmatched != 3 {
		t.Errorf("total: %+v", total)
	}
	// 106 requests: 91 in slot 6 ([32, 64) µs), 5 in slot 9, 10 in slot 10: the median is in slot 6, the
	// 99th percentile (the 105th request) in slot 10.
	if total.DeviceP50 == nil || total.DeviceP50.Slot != 6 || total.DeviceP99 == nil || total.DeviceP99.Slot != 10 {
		t.Errorf("node device p50 %+v, p99 %+v", total.DeviceP50, total.DeviceP99)
	}
	var out bytes.Buffer
	s := Summary{BlockIO: b, top: 20}
	s.tableBlockIO(&errWriter{w: &out})
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 7 || !strings.HasPrefix(lines[2], "pod ns/db") || !strings.HasPrefix(lines[5], "node") {
		t.Errorf("table:\n%s", out.String())
	}
	if buildBlockIO(nil, procs) != nil {
		t.Error("a block I/O section without a tracer")
	}
}
