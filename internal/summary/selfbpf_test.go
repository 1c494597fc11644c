package summary

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tare-dev/tare/internal/bpfstats"
	"github.com/tare-dev/tare/internal/sample"
)

// TestBuildSelfBPF: the window's figure is the programs' deltas from the first sample to the last, the
// ones outside tare summed apart from the task pass, in millicores of the window.
func TestBuildSelfBPF(t *testing.T) {
	t.Parallel()
	first := sample.Sample{SelfBPF: []bpfstats.Stat{{Name: "exectrace/process_exec", RunTime: time.Millisecond, RunCount: 10}}}
	last := sample.Sample{SelfBPF: []bpfstats.Stat{
		{Name: "blockio/rq_complete", RunTime: 4 * time.Millisecond, RunCount: 100},
		{Name: "exectrace/process_exec", RunTime: 7 * time.Millisecond, RunCount: 70},
		{Name: "taskiter/open-coded", InSelf: true, RunTime: 20 * time.Millisecond, RunCount: 10},
	}}
	got := buildSelfBPF(first, last, 10)
	want := &SelfBPF{Programs: []bpfstats.Stat{
		{Name: "blockio/rq_complete", RunTime: 4 * time.Millisecond, RunCount: 100},
		{Name: "exectrace/process_exec", RunTime: 6 * time.Millisecond, RunCount: 60},
		{Name: "taskiter/open-coded", InSelf: true, RunTime: 20 * time.Millisecond, RunCount: 10},
	}, Outside: 1, InSelf: 2} // 10 ms and 20 ms over 10 s
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("buildSelfBPF (-want +got):\n%s", d)
	}
	if buildSelfBPF(sample.Sample{}, sample.Sample{}, 10) != nil {
		t.Error("samples without statistics give a figure")
	}
	var b strings.Builder
	Summary{SelfBPF: got}.tableSelfBPF(&errWriter{w: &b})
	if !strings.Contains(b.String(), "in-kernel BPF 1.00m") || !strings.Contains(b.String(), "task pass 2.00m") {
		t.Errorf("table line %q", b.String())
	}
}
