package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/tare-dev/tare/internal/experiment"
	"github.com/tare-dev/tare/internal/explain"
	"github.com/tare-dev/tare/internal/export"
	"github.com/tare-dev/tare/internal/record"
	"github.com/tare-dev/tare/internal/sample"
)

// TestVerbsAgreeOnNodeBusy: report, explain, diff and export give the same node busy for one recording,
// as window totals or as per-interval series whose time-weighted mean is that total; so does measure for
// the recording it makes. All come from sample.BusyMeter.
func TestVerbsAgreeOnNodeBusy(t *testing.T) {
	t.Parallel()
	t.Run("burner.db", func(t *testing.T) {
		t.Parallel()
		verbsAgree(t, "testdata/burner.db", nil)
	})
	t.Run("measured with a burner", func(t *testing.T) {
		t.Parallel()
		if testing.Short() {
			t.Skip("measures for 2 s")
		}
		h := startHelper(t, "burn", "300") // stopped when the test ends
		if l := h.line(t, 10*time.Second); l != "ready" {
			t.Fatalf("burner says %q", l)
		}
		db := filepath.Join(t.TempDir(), "node.db")
		measured := measureJSON(t, "--duration", "2s", "--interval", "250ms", "--detail-interval", "1s", "--record", db)
		verbsAgree(t, db, &measured.Reconcile.NodeBusy)
	})
}

func verbsAgree(t *testing.T, db string, measured *float64) {
	t.Helper()
	rec, err := record.Read(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	secs := make([]float64, 0, len(rec.Samples))
	for _, s := range rec.Samples[1:] {
		secs = append(secs, s.Elapsed.Seconds())
	}
	weighted := func(series []float64) float64 {
		var cpu, total float64
		for i, v := range series {
			cpu, total = cpu+v*secs[i], total+secs[i]
		}
		return cpu / total
	}

	rep := summaryJSON(t, "report", db)
	busy := rep.Reconcile.NodeBusy
	self := 0.0
	if rep.Self != nil {
		self = rep.Self.CPU.Mean
	}
	got := map[string]float64{"report: node busy mean": rep.Node.Busy.Mean}
	if measured != nil {
		got["measure"] = *measured
	}

	out, errOut, err := run(context.Background(), "explain", db, "-o", "json")
	if err != nil {
		t.Fatalf("explain: %v\n%s", err, errOut)
	}
	var ex explain.Report
	if err := json.Unmarshal([]byte(out), &ex); err != nil {
		t.Fatal(err)
	}
	got["explain: per-interval series"] = weighted(ex.Activity.Series)
	if math.Abs(ex.NodeBusy-busy) > 0.05 { // printed to 0.1m
		t.Errorf("explain says node busy %.1fm, report %.4fm", ex.NodeBusy, busy)
	}

	out, errOut, err = run(context.Background(), "export", db, "--format", "json")
	if err != nil {
		t.Fatalf("export: %v\n%s", err, errOut)
	}
	var doc struct {
		Meta   sample.Meta     `json:"meta"`
		Series []export.Series `json:"series"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	for _, s := range doc.Series {
		if s.Metric == "tare_node_busy_millicores" {
			var vs []float64
			for _, p := range s.Points {
				vs = append(vs, p.Value)
			}
			got["export: tare_node_busy_millicores"] = weighted(vs)
			if s.Labels["reference"] != string(rep.Reconcile.ReferenceKind) {
				t.Errorf("export names the reference %q, report %q", s.Labels["reference"], rep.Reconcile.ReferenceKind)
			}
		}
	}

	// diff A A with one block spanning the whole recording: its node-busy leaves tare out.
	block := time.Duration(rep.Window.Seconds * float64(time.Second)).Truncate(time.Millisecond)
	out, errOut, err = run(context.Background(), "diff", db, db, "--block", block.String(), "-o", "json")
	if err != nil {
		t.Fatalf("diff: %v\n%s", err, errOut)
	}
	var res experiment.Results
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	for i, tr := range res.Trials {
		got[fmt.Sprintf("diff: trial %d node-busy + tare", i+1)] = tr.Metrics["node-busy"] + self
	}
	if len(res.Trials) != 2 {
		t.Errorf("diff made %d trials of one block each, want 2", len(res.Trials))
	}

	t.Logf("%s: node busy %.4fm from %s", db, busy, rep.Reconcile.Reference)
	for verb, v := range got {
		if math.Abs(v-busy) > 1e-6*math.Max(1, busy) {
			t.Errorf("%s gives node busy %.6fm, report %.6fm", verb, v, busy)
		}
	}
}

// TestGlobalRootsReachTheSampler: --proc-root, --sys-root, --host-root and --cgroup-root end up in the
// sampler's options.
func TestGlobalRootsReachTheSampler(t *testing.T) {
	t.Parallel()
	root := newRoot(streams{})
	if err := root.ParseFlags([]string{"--proc-root", "/host/proc", "--sys-root", "/host/sys", "--host-root", "/host", "--cgroup-root", "/host/sys/fs/cgroup"}); err != nil {
		t.Fatal(err)
	}
	g := &globalOptions{}
	for name, p := range map[string]*string{"proc-root": &g.procRoot, "sys-root": &g.sysRoot, "host-root": &g.hostRoot, "cgroup-root": &g.cgroupRoot} {
		*p = root.PersistentFlags().Lookup(name).Value.String()
	}
	o := g.sampleOptions(sample.Options{Interval: time.Second})
	if o.ProcRoot != "/host/proc" || o.SysRoot != "/host/sys" || o.HostRoot != "/host" || o.CgroupRoot != "/host/sys/fs/cgroup" || o.Interval != time.Second {
		t.Errorf("sampler options %+v", o)
	}
}
