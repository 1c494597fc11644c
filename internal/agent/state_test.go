package agent

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tare-dev/tare/internal/sample"
)

// feed builds a state of ring length n (interval 1 s) and adds samples, the i-th at second i.
func feed(n int, samples ...sample.Sample) *state {
	st := newState(n, time.Duration(n-1)*time.Second)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	meta := sample.Meta{Interval: time.Second, CPUs: 2, NodeReference: sample.RefProcStat}
	for i, x := range samples {
		x.Seq, x.Time = i, t0.Add(time.Duration(i)*time.Second)
		if i > 0 {
			x.Elapsed = time.Second
		}
		x.Node.CPU.User = float64(i) // one core busy
		st.add(x, meta)
	}
	return st
}

var (
	kubelet = sample.ProcInfo{ID: 1, Key: sample.ProcKey{PID: 10}, Comm: "kubelet", Group: "kubelet", GroupKind: "component"}
	mount   = sample.ProcInfo{ID: 2, Key: sample.ProcKey{PID: 11}, PPID: 10, ParentID: 1, Comm: "mount", Group: "kubelet", GroupKind: "component", BornSeq: 1, FirstSeq: 1}
	secret  = sample.ProcInfo{ID: 3, Key: sample.ProcKey{PID: 12}, Comm: "--token=SECRETX", Group: "other", GroupKind: "other"}
)

// TestStateCounters: counters are cumulative, a short-lived child counts as a run of its parent's group,
// and a process that ended is forgotten once no sample in the ring names it.
func TestStateCounters(t *testing.T) {
	st := feed(3,
		sample.Sample{New: []sample.ProcInfo{kubelet, secret}},
		sample.Sample{New: []sample.ProcInfo{mount}, Procs: []sample.ProcSample{{ID: 1, CPUNs: 3e8}, {ID: 2, CPUNs: 2e8}}, Exited: []int64{2}},
		sample.Sample{Procs: []sample.ProcSample{{ID: 1, CPUNs: 5e8}}},
	)
	k := groupKey{group: "kubelet", kind: "component"}
	got := *st.groups[k]
	want := group{cpuNs: 10e8, childNs: 2e8, runs: 1, live: 1, seen: got.seen}
	if d := cmp.Diff(want, got, cmp.AllowUnexported(group{})); d != "" {
		t.Errorf("kubelet's group (-want +got):\n%s", d)
	}
	if _, ok := st.procs[2]; !ok {
		t.Error("mount was forgotten while a sample in the ring names it")
	}
	if st.procs[3].info.Comm != "--token=***" {
		t.Errorf("comm kept as %q, want it redacted", st.procs[3].info.Comm)
	}
	if st.busy[sample.RefProcStat] != 2 {
		t.Errorf("node busy %v CPU seconds, want 2", st.busy[sample.RefProcStat])
	}
	// Two more samples push the one that named mount out of the ring.
	st2 := feed(3,
		sample.Sample{New: []sample.ProcInfo{kubelet}},
		sample.Sample{New: []sample.ProcInfo{mount}, Procs: []sample.ProcSample{{ID: 2, CPUNs: 2e8}}, Exited: []int64{2}},
		sample.Sample{}, sample.Sample{}, sample.Sample{},
	)
	if _, ok := st2.procs[2]; ok {
		t.Error("mount is still known after every sample naming it left the ring")
	}
	if st2.n != 3 || st2.at(0).Seq != 2 {
		t.Errorf("ring holds %d samples from %d, want 3 from 2", st2.n, st2.at(0).Seq)
	}
}

// TestStateSeries: a trailing window is numbered from its baseline, with each process's identity in the
// sample it was first seen in (the baseline for those already there) and its birth counted from there.
func TestStateSeries(t *testing.T) {
	st := feed(5,
		sample.Sample{New: []sample.ProcInfo{kubelet}},
		sample.Sample{Procs: []sample.ProcSample{{ID: 1, CPUNs: 1e8}}},
		sample.Sample{New: []sample.ProcInfo{func() sample.ProcInfo { m := mount; m.BornSeq, m.FirstSeq = 2, 2; return m }()},
			Procs: []sample.ProcSample{{ID: 1, CPUNs: 1e8}, {ID: 2, CPUNs: 1e8}}},
		sample.Sample{Procs: []sample.ProcSample{{ID: 1, CPUNs: 1e8}}, Exited: []int64{2}},
	)
	meta, xs, err := st.series(2 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		Seq  int
		New  []int64
		Born []int
	}
	var got []row
	for _, x := range xs {
		r := row{Seq: x.Seq}
		for _, info := range x.New {
			r.New, r.Born = append(r.New, info.ID), append(r.Born, info.BornSeq)
		}
		got = append(got, r)
	}
	want := []row{{Seq: 0, New: []int64{1}, Born: []int{0}}, {Seq: 1, New: []int64{2}, Born: []int{1}}, {Seq: 2}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("window (-want +got):\n%s", d)
	}
	if meta.Duration != 2*time.Second {
		t.Errorf("meta duration %s, want 2s", meta.Duration)
	}
}
