package htmlreport

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/tare-dev/tare/internal/explain"
	"github.com/tare-dev/tare/internal/sample"
	"github.com/tare-dev/tare/internal/summary"
)

// TestReconciliationWarningShown: a reconciliation that does not add up puts its warning on the page, as a
// card drawn to stand out and in the per-component section, next to the figures it qualifies.
func TestReconciliationWarningShown(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	var ss []sample.Sample
	for i := range 4 {
		s := sample.Sample{Seq: i, Time: t0.Add(time.Duration(i) * time.Second), Node: sample.Node{TasksCPUNs: 1e12 + uint64(i)*300e6}}
		if i == 0 {
			s.New = []sample.ProcInfo{{ID: 1, Group: "burner", Cmdline: "burn"}}
		} else {
			s.Elapsed = time.Second
			s.Procs = []sample.ProcSample{{ID: 1, CPUNs: 450e6}} // more than the node ran
		}
		ss = append(ss, s)
	}
	sum := summary.Build(sample.Meta{CPUs: 2, KernelHZ: 250, NodeReference: sample.RefCgroupV1}, ss, summary.Options{})
	if len(sum.Reconcile.Warnings) != 1 {
		t.Fatalf("warnings %+v", sum.Reconcile.Warnings)
	}
	var b bytes.Buffer
	if err := Write(&b, Node(explain.New(ss, sum, explain.API{}, nil, nil), "recording x.db", "test")); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	for _, want := range []string{`<div class="card warn"><div class="label">warning</div><div class="value">over-attributed</div>`,
		"Warning (over-attributed): groups and tare hold 150.0m more than node busy", "credited twice"} {
		if !strings.Contains(html, want) {
			t.Errorf("the page does not say %q", want)
		}
	}
}
