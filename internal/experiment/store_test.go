package experiment

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tare-dev/tare/internal/compare"
	"github.com/tare-dev/tare/internal/record"
	"github.com/tare-dev/tare/internal/session"
	"github.com/tare-dev/tare/internal/warning"
)

// oldStore opens a copy of the experiment captured on the lab before the warnings and labs tables.
func oldStore(t *testing.T) (string, *Store, []Trial) {
	t.Helper()
	dir := oldStoreDir(t)
	st, trials, err := Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	return dir, st, trials
}

// oldStoreDir is a directory holding a copy of the experiment captured on the lab (leader election on and
// off), from before the warnings and labs tables.
func oldStoreDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	old, err := os.ReadFile("../cli/testdata/experiment/experiment.db")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(StorePath(dir), old, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestStoreKeepsTrialWarnings: a trial's window warnings, and a concurrent trial's metrics lab by lab,
// survive the experiment file, including one written before their tables (the experiment captured on
// the lab): it reads as trials without them, takes them on the next save (rows of an earlier run of a
// trial are not the current run's), and the results list the warnings with their trial and sample.
func TestStoreKeepsTrialWarnings(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir, st, trials := oldStore(t)
	for _, tr := range trials {
		if len(tr.Warnings) > 0 || len(tr.Labs) > 0 {
			t.Errorf("trial %d of a file without the tables has warnings %v, labs %v", tr.Seq, tr.Warnings, tr.Labs)
		}
	}
	want := []session.Warning{
		{Seq: 0, Kind: session.Source, Message: "reading node resources: gone"},
		{Seq: 4, Kind: session.SinkFailed, Message: "disk full; measuring on without it"},
	}
	labs := []compare.LabMetrics{
		{Lab: 3, Metrics: map[string]float64{"control-plane-cpu": 31.5, "api-requests": 120}},
		{Lab: 7, Metrics: map[string]float64{"control-plane-cpu": 28.25}},
	}
	trials[1].Warnings, trials[1].Labs = want, labs
	if err := st.Save(ctx, trials[1]); err != nil {
		t.Fatal(err)
	}
	// Rows of an earlier run of trial 3 (another start) are not the current run's.
	if _, err := st.db.ExecContext(ctx, "INSERT INTO trial_warnings VALUES(?,?,?,?,?)", 3, 1, 2, "source", "stale"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.db.ExecContext(ctx, "INSERT INTO trial_labs VALUES(?,?,?,?)", 3, 1, 2, `{"control-plane-cpu": 1}`); err != nil {
		t.Fatal(err)
	}
	st.Close()

	st, again, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if diff := cmp.Diff(want, again[1].Warnings); diff != "" {
		t.Errorf("trial 2's warnings read back (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(labs, again[1].Labs); diff != "" {
		t.Errorf("trial 2's labs read back (-want +got):\n%s", diff)
	}
	if len(again[2].Warnings) > 0 || len(again[2].Labs) > 0 {
		t.Errorf("trial 3 took a stale row: %v %v", again[2].Warnings, again[2].Labs)
	}
	res := Analyze(st.Spec, st.Plan, again)
	for _, w := range []warning.Warning{
		{Code: "window-source", Figure: "trials", Subject: "trial 2 sample 0", Message: "window warning in trial 2 sample 0: reading node resources: gone"},
		{Code: "window-sink", Figure: "trials", Subject: "trial 2 sample 4", Message: "window warning in trial 2 sample 4: disk full; measuring on without it"},
	} {
		if !slices.Contains(res.Warnings, w) {
			t.Errorf("results lack %+v:\n%+v", w, res.Warnings)
		}
	}
}

// TestStoreNewFileHasWarningsTable: a new experiment file has the table from the start, so an earlier tare
// can read it (the table is extra) and the schema version stays 1.
func TestStoreNewFileHasWarningsTable(t *testing.T) {
	t.Parallel()
	spec, err := Parse([]byte("name: x\ntrials: 2\nwindow: 10s\nvariants: [{name: a}, {name: b}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	st, _, err := Create(context.Background(), filepath.Join(t.TempDir(), "e"), spec)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var n int
	var version string
	if err := st.db.QueryRow("SELECT count(*) FROM sqlite_master WHERE name = 'trial_warnings'").Scan(&n); err != nil || n != 1 {
		t.Errorf("warnings table: %d, %v", n, err)
	}
	if err := st.db.QueryRow("SELECT value FROM meta WHERE key = 'schema_version'").Scan(&version); err != nil || version != "1" {
		t.Errorf("schema version %q, %v", version, err)
	}
}

// TestOpenChecksTheFile: --resume of a directory whose experiment.db is not a readable experiment file
// fails through record's check of tare's SQLite files, saying what the file is and what to do.
func TestOpenChecksTheFile(t *testing.T) {
	t.Parallel()
	good, err := os.ReadFile("../cli/testdata/experiment/experiment.db")
	if err != nil {
		t.Fatal(err)
	}
	recording, err := os.ReadFile("../cli/testdata/recording.db")
	if err != nil {
		t.Fatal(err)
	}
	corrupt := append([]byte(nil), good...)
	corrupt[100] ^= 0xff // page 1's b-tree page type
	newer := func(dir string) {
		db, err := sql.Open("sqlite", StorePath(dir))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if _, err := db.Exec("UPDATE meta SET value = '2' WHERE key = 'schema_version'"); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name  string
		file  []byte
		after func(dir string)
		is    error
		says  string
	}{
		{"not sqlite", []byte("name: x\n"), nil, errNotExperiment, "not a tare experiment file (not a SQLite file; start one with tare experiment SPEC --out DIR)"},
		{"a recording", recording, nil, errNotExperiment, `not a tare experiment file (its meta table says format="tare-recording", not tare-experiment`},
		{"corrupt", corrupt, nil, record.ErrDamaged, "damaged experiment file (reading its meta table: database disk image is malformed"},
		{"newer", good, newer, record.ErrNewerVersion, "experiment file schema version 2 is newer than this tare reads (it reads 1 to 1): upgrade tare"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			if err := os.WriteFile(StorePath(dir), tt.file, 0o644); err != nil {
				t.Fatal(err)
			}
			if tt.after != nil {
				tt.after(dir)
			}
			st, _, err := Open(context.Background(), dir)
			if err == nil {
				st.Close()
				t.Fatal("Open accepted it")
			}
			if !errors.Is(err, tt.is) || !strings.Contains(err.Error(), tt.says) {
				t.Errorf("error %q, want one matching %v that says %q", err, tt.is, tt.says)
			}
		})
	}
}
