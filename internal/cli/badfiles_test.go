package cli

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestFilesThatCannotHurt: every file argument given a FIFO (no writer: opening it would wait forever), a
// character device or a directory is refused at once, naming what it is; an output path that cannot be
// written fails before the work (profile's 30 s are not spent first); outputs are their owner's alone; and
// reading a recording leaves its directory as it was.
func TestFilesThatCannotHurt(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []struct{ path, says string }{{fifo, "a FIFO"}, {"/dev/zero", "a character device"}, {dir, "a directory"}} {
		for _, args := range [][]string{
			{"report", bad.path},
			{"export", bad.path, "--format", "csv"},
			{"diff", bad.path, bad.path},
			{"fit", "--density", bad.path, "--pods", "10"},
			{"fit", "--allocatable", bad.path, "--pods", "10"},
			{"experiment", bad.path},
		} {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			start := time.Now()
			_, _, err := run(ctx, args...)
			cancel()
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("tare %s took %v", strings.Join(args, " "), took)
			}
			if err == nil || !strings.Contains(err.Error(), bad.says) {
				t.Errorf("tare %s: %v; want it refused as %s", strings.Join(args, " "), err, bad.says)
			}
		}
	}

	// Output paths are checked first.
	start := time.Now()
	_, _, err := run(context.Background(), "profile", "--duration", "30s", "--pprof", "/nonexistent/x.pb.gz")
	if err == nil || !strings.Contains(err.Error(), "--pprof /nonexistent/x.pb.gz") || time.Since(start) > 10*time.Second {
		t.Errorf("profile --pprof into a missing directory: %v after %v; want it refused before profiling", err, time.Since(start))
	}

	// A recording read by report and exported: the directory keeps only the recording and the export,
	// which is private.
	recDir := t.TempDir()
	rec := filepath.Join(recDir, "r.db")
	if _, errOut, err := run(context.Background(), "measure", "--duration", "2s", "--interval", "500ms", "--record", rec, "-o", "json"); err != nil {
		t.Fatalf("measure --record: %v\n%s", err, errOut)
	}
	if _, _, err := run(context.Background(), "export", rec, "--format", "csv", "--out", "/nonexistent/x.csv"); err == nil || !strings.Contains(err.Error(), "--out /nonexistent/x.csv") {
		t.Errorf("export --out into a missing directory: %v", err)
	}
	for _, args := range [][]string{{"report", rec}, {"export", rec, "--format", "csv"}, {"diff", rec, rec, "--block", "500ms"}} {
		if _, errOut, err := run(context.Background(), args...); err != nil {
			t.Errorf("tare %s: %v\n%s", strings.Join(args, " "), err, errOut)
		}
	}
	out := filepath.Join(recDir, "r.csv")
	if _, errOut, err := run(context.Background(), "export", rec, "--format", "csv", "--out", out); err != nil {
		t.Fatalf("export --out: %v\n%s", err, errOut)
	}
	names, _ := filepath.Glob(filepath.Join(recDir, "*"))
	if !slices.Equal(names, []string{out, rec}) {
		t.Errorf("after report, export and diff the directory holds %v, want the recording and the export only", names)
	}
	for _, p := range []string{rec, out} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v (%v), want 0600: it carries command lines", p, fi.Mode(), err)
		}
	}
}

// TestLabStateWithoutWhatItNeeds: a state.json that tare lab up did not write ({}; or a pause record with no
// start) is refused by pause and unpause, saying so, and nothing is written anywhere (the directory comes
// from the command line, never from the file).
func TestLabStateWithoutWhatItNeeds(t *testing.T) {
	t.Parallel()
	for name, state := range map[string]string{
		"empty":        `{}`,
		"no dir":       `{"version": 1, "processes": []}`,
		"paused never": `{"version": 1, "dir": "/elsewhere", "processes": [], "paused": {"complete": true}}`,
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "state.json"), []byte(state), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, verb := range []string{"pause", "unpause"} {
			_, _, err := run(context.Background(), "lab", verb, "--dir", dir)
			if err == nil {
				t.Errorf("%s: lab %s accepted %s", name, verb, state)
				continue
			}
			if strings.Contains(err.Error(), "2562047h") || strings.Contains(err.Error(), "lab in  runs") {
				t.Errorf("%s: lab %s: %v", name, verb, err)
			}
			if name != "no dir" && !strings.Contains(err.Error(), "state.json") {
				t.Errorf("%s: lab %s: %v; want the state file named", name, verb, err)
			}
		}
		if names, _ := filepath.Glob(filepath.Join(dir, "*")); len(names) != 1 {
			t.Errorf("%s: the lab directory holds %v after pause and unpause", name, names)
		}
	}
	if _, err := os.Stat("state.json"); err == nil {
		t.Error("a state.json was written in the current directory")
	}
}
