package experiment

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tare-dev/tare/internal/session"
)

// TestStoreKeepsTrialWarnings: a trial's window warnings survive the experiment file, including one
// written before the warnings table (the experiment captured on the lab): it reads as trials without
// warnings, takes them on the next save, and the results list them with their trial and sample.
func TestStoreKeepsTrialWarnings(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	old, err := os.ReadFile("../cli/testdata/experiment/experiment.db")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(StorePath(dir), old, 0o644); err != nil {
		t.Fatal(err)
	}
	st, trials, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range trials {
		if len(tr.Warnings) > 0 {
			t.Errorf("trial %d of a file without the table has warnings %v", tr.Seq, tr.Warnings)
		}
	}
	want := []session.Warning{
		{Seq: 0, Kind: session.Source, Message: "reading node resources: gone"},
		{Seq: 4, Kind: session.SinkFailed, Message: "disk full; measuring on without it"},
	}
	trials[1].Warnings = want
	if err := st.Save(ctx, trials[1]); err != nil {
		t.Fatal(err)
	}
	// A row of an earlier run of trial 3 (another start) is not the current run's.
	if _, err := st.db.ExecContext(ctx, "INSERT INTO trial_warnings VALUES(?,?,?,?,?)", 3, 1, 2, "source", "stale"); err != nil {
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
	if len(again[2].Warnings) > 0 {
		t.Errorf("trial 3 took a stale row: %v", again[2].Warnings)
	}
	res := Analyze(st.Spec, again)
	for _, line := range []string{
		"window warning in trial 2 sample 0: reading node resources: gone",
		"window warning in trial 2 sample 4: disk full; measuring on without it",
	} {
		if !slices.Contains(res.Warnings, line) {
			t.Errorf("results lack %q:\n%s", line, strings.Join(res.Warnings, "\n"))
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

// TestTrialWarningsGrouped: a message repeated across trials is one line naming the first five.
func TestTrialWarningsGrouped(t *testing.T) {
	t.Parallel()
	var trials []Trial
	for i := 1; i <= 7; i++ {
		trials = append(trials, Trial{Seq: i, Warnings: []session.Warning{{Seq: 0, Kind: session.Source, Message: "no PSI"}}})
	}
	trials[2].Warnings = append(trials[2].Warnings, session.Warning{Seq: 9, Kind: session.Skipped, Message: "reading /proc/stat: gone"})
	got := trialWarnings(trials)
	want := []string{
		"window warning in trial 1 sample 0, trial 2 sample 0, trial 3 sample 0, trial 4 sample 0, trial 5 sample 0 and 2 more: no PSI",
		"window warning in trial 3 sample 9: reading /proc/stat: gone",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
