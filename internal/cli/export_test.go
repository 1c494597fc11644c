package cli

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tare-dev/tare/internal/export"
	"github.com/tare-dev/tare/internal/lab"
)

// promtool finds Prometheus's promtool, or extracts it from Debian's prometheus package into tare's
// cache without installing the package (which would start a Prometheus server).
func promtool(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("promtool"); err == nil {
		return p
	}
	cache, err := lab.CacheDir()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(cache, "promtool")
	bin := filepath.Join(dir, "usr", "bin", "promtool")
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	requireRoot(t)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	download := func() ([]byte, error) {
		get := exec.Command("apt-get", "download", "prometheus")
		get.Dir = dir
		return get.CombinedOutput()
	}
	if _, err := download(); err != nil { // a fresh machine may have no package lists yet
		if out, err := exec.Command("apt-get", "update", "-qq").CombinedOutput(); err != nil {
			t.Fatalf("apt-get update: %v\n%s", err, out)
		}
		if out, err := download(); err != nil {
			t.Fatalf("apt-get download prometheus: %v\n%s", err, out)
		}
	}
	debs, _ := filepath.Glob(filepath.Join(dir, "prometheus_*.deb"))
	if len(debs) == 0 {
		t.Fatal("apt-get download left no prometheus .deb")
	}
	if out, err := exec.Command("dpkg-deb", "-x", debs[0], dir).CombinedOutput(); err != nil {
		t.Fatalf("dpkg-deb -x: %v\n%s", err, out)
	}
	return bin
}

// TestExport: a real recording exported three ways: the CSV's node CPU agrees with the recording's own
// counters, the JSON decodes into the same series, and promtool (Prometheus's own parser) turns the
// OpenMetrics file into TSDB blocks holding every sample.
func TestExport(t *testing.T) {
	if testing.Short() {
		t.Skip("records for 3 s")
	}
	dir := t.TempDir()
	db := filepath.Join(dir, "node.db")
	if _, errOut, err := run(context.Background(), "measure", "--duration", "3s", "--interval", "250ms", "--detail-interval", "1s", "--record", db, "-o", "json"); err != nil {
		t.Fatalf("measure: %v\n%s", err, errOut)
	}
	s := summaryJSON(t, "report", db)
	csvOut, _, err := run(context.Background(), "export", db, "--format", "csv")
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(strings.NewReader(csvOut)).ReadAll()
	if err != nil {
		t.Fatalf("the CSV does not parse: %v", err)
	}
	head := strings.Join(rows[0], ",")
	if head != "time,unix_ms,metric,group,group_kind,host,memory,mode,reference,value" {
		t.Errorf("header %q", head)
	}
	col := map[string]int{}
	for i, name := range rows[0] {
		col[name] = i
	}
	// The mean of the exported /proc/stat busy modes over the intervals is the summary's /proc/stat busy.
	busy := map[string]float64{}
	intervals := map[string]bool{}
	for _, r := range rows[1:] {
		if r[col["metric"]] == "tare_node_cpu_millicores" && r[col["mode"]] != "idle" && r[col["mode"]] != "iowait" {
			v, _ := strconv.ParseFloat(r[col["value"]], 64)
			busy[r[0]] += v
			intervals[r[0]] = true
		}
	}
	// Weighted by each interval's length, as the summary's window figure is.
	times := make([]string, 0, len(busy))
	for k := range busy {
		times = append(times, k)
	}
	sort.Strings(times)
	var mean, total float64
	prev, _ := time.Parse(time.RFC3339Nano, times[0])
	prev = prev.Add(-s.Window.End.Sub(s.Window.Start) / time.Duration(len(times)))
	if first, err := time.Parse(time.RFC3339Nano, times[0]); err == nil && s.Window.Start.Before(first) {
		prev = s.Window.Start
	}
	for _, k := range times {
		at, _ := time.Parse(time.RFC3339Nano, k)
		w := at.Sub(prev).Seconds()
		mean += busy[k] * w
		total += w
		prev = at
	}
	mean /= total
	if len(intervals) != s.Window.Intervals || abs(mean-s.Node.ProcStatBusy) > 0.05*s.Node.ProcStatBusy+2 {
		t.Errorf("CSV: %d intervals with mean busy %.1fm; the summary has %d intervals, %.1fm", len(intervals), mean, s.Window.Intervals, s.Node.ProcStatBusy)
	}
	jsonOut, _, err := run(context.Background(), "export", db, "--format", "json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Series []export.Series `json:"series"`
	}
	if err := json.Unmarshal([]byte(jsonOut), &doc); err != nil || len(doc.Series) < 11 {
		t.Errorf("JSON: %v, %d series", err, len(doc.Series))
	}
	om := filepath.Join(dir, "node.om")
	if _, errOut, err := run(context.Background(), "export", db, "--format", "openmetrics", "--out", om); err != nil {
		t.Fatalf("export openmetrics: %v\n%s", err, errOut)
	}
	pt := promtool(t)
	tsdb := filepath.Join(dir, "tsdb")
	if out, err := exec.Command(pt, "tsdb", "create-blocks-from", "openmetrics", om, tsdb).CombinedOutput(); err != nil {
		t.Fatalf("promtool rejects the OpenMetrics export: %v\n%s", err, out)
	}
	if err := os.MkdirAll(filepath.Join(tsdb, "wal"), 0o755); err != nil { // dump opens the head's WAL too
		t.Fatal(err)
	}
	out, err := exec.Command(pt, "tsdb", "dump", tsdb).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool tsdb dump: %v\n%s", err, out)
	}
	loads := strings.Count(string(out), "tare_node_load1")
	if loads != s.Window.Intervals {
		t.Errorf("Prometheus holds %d load samples, want one per interval (%d)", loads, s.Window.Intervals)
	}
	// Each label means one thing: node busy's counter is its reference; a group's kind is group_kind.
	dump := string(out)
	if ref := `reference="` + string(s.Reconcile.ReferenceKind) + `"`; !strings.Contains(dump, ref) {
		t.Errorf("Prometheus holds no node busy series with %s", ref)
	}
	if !strings.Contains(dump, `group_kind="`) {
		t.Errorf("Prometheus holds no group series with a group_kind label")
	}
	if strings.Contains(strings.ReplaceAll(dump, "group_kind=", ""), "kind=") {
		t.Errorf("a series still has a label named kind:\n%.2000s", dump)
	}
	if _, _, err := run(context.Background(), "export", db, "--format", "xml"); err == nil || !strings.Contains(err.Error(), "want csv, json, openmetrics") {
		t.Errorf("bad format: %v", err)
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
