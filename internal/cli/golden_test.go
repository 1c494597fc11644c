package cli

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// TestReportGolden: tare report on a recording captured on a real machine (a shell loop running ls every
// second) prints exactly the golden table and JSON, on stdout and stderr.
func TestReportGolden(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
	}{
		{"report.table", []string{"report", "testdata/recording.db", "--top", "10"}},
		{"report.json", []string{"report", "testdata/recording.db", "-o", "json"}},
		{"report.match", []string{"report", "testdata/recording.db", "--match", "ls -l"}},
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

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/cli -run Golden -update)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", name, diff)
	}
}
