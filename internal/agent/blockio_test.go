package agent

import (
	"math"
	"testing"
	"time"

	"github.com/tare-dev/tare/internal/blockio"
	"github.com/tare-dev/tare/internal/sample"
	"github.com/tare-dev/tare/internal/testenv"
	"github.com/tare-dev/tare/internal/testload"
)

// TestAgentBlockIO: fio reads a file at random with direct I/O, in a pod cgroup of its own, while the agent
// counts block I/O. Between a scrape before fio starts and one after the detail sample that follows its end, the pod's read bytes and
// requests in /metrics are fio's own (its JSON report) within 2%, its device-time histogram counts as
// many requests, and the requests the tracer could not charge are exported.
func TestAgentBlockIO(t *testing.T) {
	requireTiming(t)
	testenv.NeedRoot(t, "loading BPF programs needs CAP_BPF and CAP_PERFMON")
	const uid = "b10c1010-0000-4000-8000-000000000001"
	fio := testload.StartFioPod(t, uid, "ctr0b10c1010", 2*time.Second)
	// Block I/O is read on detail samples, every fifth here.
	r := startAgent(t, Options{Interval: 100 * time.Millisecond, Detail: 500 * time.Millisecond, Window: 10 * time.Second, BlockIO: true})
	pod := `pod="` + uid + `"`
	before := r.scrape(t)
	if _, n := before.sum("tare_block_io_uncounted_requests_total"); n != 2 {
		t.Fatalf("no tare_block_io_uncounted_requests_total: is the tracer on?\n%.3000s", before.text)
	}
	reads := fio.Run(t)
	for range 6 { // past the next detail sample, whichever sample fio ended in
		r.nextSample(t)
	}
	after := r.scrape(t)
	want := struct{ IOBytes, TotalIOs float64 }{float64(reads.Bytes), float64(reads.Requests)}
	delta := func(metric string, match ...string) float64 {
		b, _ := before.sum(metric, match...)
		a, _ := after.sum(metric, match...)
		return a - b
	}
	bytes := delta("tare_group_block_io_bytes_total", pod, `direction="read"`)
	reqs := delta("tare_group_block_io_requests_total", pod, `direction="read"`)
	all := delta("tare_group_block_io_requests_total", pod)
	hist := delta("tare_group_block_io_device_seconds_count", pod)
	t.Logf("fio: %.0f reads, %.0f bytes; the agent: %.0f reads, %.0f bytes, %.0f requests in the device histogram", want.TotalIOs, want.IOBytes, reqs, bytes, hist)
	for _, c := range []struct {
		what      string
		got, want float64
	}{{"read bytes", bytes, want.IOBytes}, {"read requests", reqs, want.TotalIOs}} {
		if math.Abs(c.got-c.want) > 0.02*c.want {
			t.Errorf("%s: the agent %.0f, fio %.0f: more than 2%% apart", c.what, c.got, c.want)
		}
	}
	if hist != all || all == 0 {
		t.Errorf("the device histogram counts %.0f requests, the requests counters %.0f", hist, all)
	}
	if inf := delta("tare_group_block_io_device_seconds_bucket", pod, `le="+Inf"`); inf != hist {
		t.Errorf("the +Inf bucket rose by %.0f, the histogram's count by %.0f", inf, hist)
	}
}

// TestBlockIOReusedPID: a process that did I/O and ended before the agent read the tracer, its PID already
// another live process's: the record's command name gives it to the one that did it; a record of the live
// process goes to the live one.
func TestBlockIOReusedPID(t *testing.T) {
	a := sample.ProcInfo{ID: 1, Key: sample.ProcKey{PID: 40, Start: 100}, Comm: "fio", Group: "pod-a", GroupKind: "pod"}
	b := sample.ProcInfo{ID: 2, Key: sample.ProcKey{PID: 40, Start: 200}, Comm: "mount", Group: "kubelet", GroupKind: "component"}
	st := feed(4,
		sample.Sample{New: []sample.ProcInfo{a}},
		sample.Sample{Exited: []int64{1}},
		sample.Sample{New: []sample.ProcInfo{b}},
	)
	rec := func(comm string, cgroup uint64, n uint64) blockio.Record {
		return blockio.Record{Key: blockio.Key{PID: 40, Cgroup: cgroup, Dir: blockio.Read}, Comm: comm, Requests: n, Bytes: n << 12}
	}
	st.addBlockIO(blockio.Snapshot{Records: []blockio.Record{rec("fio", 7, 5), rec("mount", 8, 2)}}, 1)
	for _, c := range []struct {
		key  groupKey
		want uint64
	}{{groupKey{group: "pod-a", kind: "pod"}, 5}, {groupKey{group: "kubelet", kind: "component"}, 2}} {
		g := st.groups[c.key]
		if g == nil || g.io == nil || g.io.requests[blockio.Read] != c.want {
			t.Errorf("%s: got %+v, want %d reads", c.key.group, g, c.want)
		}
	}
}
