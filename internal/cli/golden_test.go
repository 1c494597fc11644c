package cli

import (
	"context"
	"errors"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tare-dev/tare/internal/testenv"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// The JSON goldens hold the recordings' times, which tare prints in the local zone: print them in UTC
// whatever the machine's zone, as they were captured.
func init() { time.Local = time.UTC }

// TestReportGolden: tare report on a recording captured on a real machine (a shell loop running ls every
// second) prints exactly the golden table and JSON, on stdout and stderr.
func TestReportGolden(t *testing.T) {
	t.Parallel()
	rec := fixture(t, "recording.db")
	tests := []struct {
		name string
		args []string
	}{
		{"report.table", []string{"report", rec, "--top", "10"}},
		{"report.json", []string{"report", rec, "-o", "json"}},
		{"report.match", []string{"report", rec, "--match", "ls -l"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out, errOut, err := run(context.Background(), tt.args...)
			if err != nil {
				t.Fatalf("%v: %v\n%s", tt.args, err, errOut)
			}
			golden(t, tt.name+".stdout", out)
			golden(t, tt.name+".stderr", errOut)
		})
	}
}

// fixture copies a file of testdata/ to a temporary directory and returns the copy's path. Reading a
// recording (SQLite in WAL mode) leaves -shm and -wal files next to it, which must not appear in testdata/.
func fixture(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	testenv.Golden(t, filepath.Join("testdata", name+".golden"), []byte(got), *update)
}

// TestExplainGolden: tare explain on the same recording, with no cluster, lab, audit log or profiles,
// prints exactly the golden findings, table and JSON. It reads no cluster and writes no flame graphs.
func TestExplainGolden(t *testing.T) {
	// Explain of a recording still asks a cluster for its facts (replica counts, leader election) when a
	// kubeconfig resolves, so the environment must not point at one. Not parallel: it sets the environment.
	t.Setenv("KUBECONFIG", "")
	t.Setenv("HOME", t.TempDir())
	dir, rec := t.TempDir(), fixture(t, "recording.db")
	tests := []struct {
		name string
		args []string
	}{
		{"explain.table", nil},
		{"explain.json", []string{"-o", "json"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			flames := filepath.Join(dir, tt.name+"-flames")
			args := append([]string{"explain", rec, "--audit", "none", "--pprof", "none",
				"--lab-dir", filepath.Join(dir, "no-lab"), "--flames", flames}, tt.args...)
			out, errOut, err := run(context.Background(), args...)
			if err != nil {
				t.Fatalf("%v: %v\n%s", args, err, errOut)
			}
			golden(t, tt.name+".stdout", out)
			golden(t, tt.name+".stderr", errOut)
			if _, err := os.Stat(flames); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("explain of a recording made %s (%v): profiles are live only", flames, err)
			}
		})
	}
}

// TestDiffGolden: tare diff of the ls-loop recording against one of the same machine with a shell loop
// burning about a quarter of a core (testdata/burner.db), cut into 1 s blocks, prints exactly the golden
// comparison, table and JSON.
func TestDiffGolden(t *testing.T) {
	t.Parallel()
	a, b := fixture(t, "recording.db"), fixture(t, "burner.db")
	tests := []struct {
		name string
		args []string
	}{
		{"diff.table", nil},
		{"diff.json", []string{"-o", "json"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			args := append([]string{"diff", a, b, "--block", "1s"}, tt.args...)
			out, errOut, err := run(context.Background(), args...)
			if err != nil {
				t.Fatalf("%v: %v\n%s", args, err, errOut)
			}
			golden(t, tt.name+".stdout", out)
			golden(t, tt.name+".stderr", errOut)
		})
	}
}

// TestExperimentResumeGolden: tare experiment --resume on a finished experiment captured on the lab
// (testdata/experiment: leader election on and off, control plane only, 2 trials each) runs nothing and
// prints its results again, exactly the golden table and JSON. The directory is copied first: opening the
// experiment file writes next to it. Its path in the output is replaced by <EXPERIMENT>.
func TestExperimentResumeGolden(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
	}{
		{"experiment.table", nil},
		{"experiment.json", []string{"-o", "json"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "experiment")
			if err := os.CopyFS(dir, os.DirFS("testdata/experiment")); err != nil {
				t.Fatal(err)
			}
			args := append([]string{"experiment", "--resume", dir, "--lab-dir", filepath.Join(t.TempDir(), "no-lab")}, tt.args...)
			out, errOut, err := run(context.Background(), args...)
			if err != nil {
				t.Fatalf("%v: %v\n%s", args, err, errOut)
			}
			golden(t, tt.name+".stdout", strings.ReplaceAll(out, dir, "<EXPERIMENT>"))
			golden(t, tt.name+".stderr", strings.ReplaceAll(errOut, dir, "<EXPERIMENT>"))
		})
	}
}
