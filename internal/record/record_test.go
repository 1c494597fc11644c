package record

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/tare-dev/tare/internal/blockio"
	"github.com/tare-dev/tare/internal/bpfstats"
	"github.com/tare-dev/tare/internal/sample"
	"github.com/tare-dev/tare/internal/summary"
	"github.com/tare-dev/tare/internal/testenv"
)

const envChild = "TARE_RECORD_CHILD"

func TestMain(m *testing.M) {
	if path := os.Getenv(envChild); path != "" {
		os.Exit(recordForever(path))
	}
	os.Exit(m.Run())
}

// recordForever records real samples of this machine every 50 ms and prints the count after each commit,
// until killed.
func recordForever(path string) int {
	ctx := context.Background()
	s, err := sample.New(ctx, sample.Options{Interval: 50 * time.Millisecond, Detail: 50 * time.Millisecond}, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	w, err := Create(ctx, path, s.Meta())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	for {
		x, err := s.Sample()
		if err == nil {
			err = w.Append(ctx, x)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Println(w.Samples())
		time.Sleep(50 * time.Millisecond)
	}
}

// liveSamples takes n real samples of this machine.
func liveSamples(t testing.TB, n int) (sample.Meta, []sample.Sample) {
	t.Helper()
	s, err := sample.New(context.Background(), sample.Options{Interval: 20 * time.Millisecond, Detail: 40 * time.Millisecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var out []sample.Sample
	for range n {
		x, err := s.Sample()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, x)
		time.Sleep(20 * time.Millisecond)
	}
	return s.Meta(), out
}

// writeRecording writes a recording of ss at path, with the window's block I/O io when it is not nil.
func writeRecording(t testing.TB, path string, meta sample.Meta, ss []sample.Sample, io *blockio.Snapshot) {
	t.Helper()
	ctx := context.Background()
	w, err := Create(ctx, path, meta)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range ss {
		if err := w.Append(ctx, x); err != nil {
			t.Fatal(err)
		}
	}
	if io != nil {
		if err := w.WriteBlockIO(ctx, *io); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Finish(ctx, meta); err != nil {
		t.Fatal(err)
	}
}

// TestRoundTrip: a recording read back gives the same summary as the live samples.
func TestRoundTrip(t *testing.T) {
	t.Parallel()
	meta, ss := liveSamples(t, 6)
	path := filepath.Join(t.TempDir(), "r.db")
	writeRecording(t, path, meta, ss, nil)
	rec, err := Read(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Samples) != len(ss) {
		t.Fatalf("read %d samples, wrote %d", len(rec.Samples), len(ss))
	}
	var live, back bytes.Buffer
	if err := summary.Build(meta, ss, summary.Options{}).JSON(&live); err != nil {
		t.Fatal(err)
	}
	if err := summary.Build(rec.Meta, rec.Samples, summary.Options{}).JSON(&back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(live.String(), back.String()); diff != "" {
		t.Errorf("summary from the recording differs from the live one (-live +recording):\n%s", diff)
	}
	// Every process reading comes back as it was taken, statm's estimates still marked (StatmOnly).
	for i := range ss {
		byID := cmpopts.SortSlices(func(a, b sample.ProcSample) bool { return a.ID < b.ID })
		if diff := cmp.Diff(ss[i].Procs, rec.Samples[i].Procs, byID, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("sample %d: process readings differ (-live +recording):\n%s", ss[i].Seq, diff)
		}
		if diff := cmp.Diff(ss[i].SelfBPF, rec.Samples[i].SelfBPF, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("sample %d: BPF run time differs (-live +recording):\n%s", ss[i].Seq, diff)
		}
	}
}

// TestRoundTripSelfBPF: the run time of tare's BPF programs each sample read comes back with it, and so
// does the summary's self_bpf (CI once saw it lost: the samples carry it only while a program of the test
// binary's is loaded, so TestRoundTrip has it by chance). A file without the table (version 3) reads
// without it.
func TestRoundTripSelfBPF(t *testing.T) {
	t.Parallel()
	meta, ss := liveSamples(t, 4)
	for i := range ss {
		ss[i].SelfBPF = []bpfstats.Stat{
			{Name: "exectrace/process_exec", RunTime: time.Duration(i) * 1500 * time.Nanosecond, RunCount: uint64(3 * i)},
			{Name: "taskiter/pass", InSelf: true, RunTime: time.Duration(i) * time.Millisecond, RunCount: uint64(i)},
		}
	}
	ss[1].SelfBPF = nil // a sample that could not read them
	path := filepath.Join(t.TempDir(), "bpf.db")
	writeRecording(t, path, meta, ss, nil)
	rec, err := Read(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range ss {
		if diff := cmp.Diff(ss[i].SelfBPF, rec.Samples[i].SelfBPF, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("sample %d (-written +read):\n%s", ss[i].Seq, diff)
		}
	}
	live := summary.Build(meta, ss, summary.Options{}).SelfBPF
	back := summary.Build(rec.Meta, rec.Samples, summary.Options{}).SelfBPF
	if live == nil || !cmp.Equal(live, back) {
		t.Errorf("summary self_bpf: live %+v, from the recording %+v", live, back)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"DROP TABLE self_bpf", "UPDATE meta SET value = '3' WHERE key = 'schema_version'"} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	_ = db.Close()
	old, err := Read(context.Background(), path)
	if err != nil {
		t.Fatalf("a version 3 file: %v", err)
	}
	if len(old.Samples) != len(ss) || old.Samples[len(ss)-1].SelfBPF != nil {
		t.Errorf("a version 3 file: %d samples, the last with BPF run time %v", len(old.Samples), old.Samples[len(ss)-1].SelfBPF)
	}
}

// TestKill9: kill -9 mid-run leaves a readable file with every sample up to the last committed one.
func TestKill9(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "killed.db")
	committed := recordThenKill(t, path, 10)
	rec, err := Read(context.Background(), path)
	if err != nil {
		t.Fatalf("recording unreadable after kill -9: %v", err)
	}
	if len(rec.Samples) < committed {
		t.Errorf("read %d samples after kill -9, %d were committed", len(rec.Samples), committed)
	}
	s := summary.Build(rec.Meta, rec.Samples, summary.Options{})
	if s.Window.Intervals < committed-1 {
		t.Errorf("summary covers %d intervals", s.Window.Intervals)
	}
}

func TestBadFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	meta, ss := liveSamples(t, 4)
	good := filepath.Join(dir, "good.db")
	writeRecording(t, good, meta, ss, nil)
	goodBytes, _ := os.ReadFile(good)

	garbage := filepath.Join(dir, "garbage.db")
	_ = os.WriteFile(garbage, []byte("this is not a database at all, just text\n"), 0o600)
	empty := filepath.Join(dir, "empty.db")
	_ = os.WriteFile(empty, nil, 0o600)
	truncated := filepath.Join(dir, "truncated.db")
	_ = os.WriteFile(truncated, goodBytes[:len(goodBytes)/3], 0o600)
	foreign := foreignSQLite(t, dir)
	future := filepath.Join(dir, "future.db")
	_ = os.WriteFile(future, goodBytes, 0o600)
	db, _ := sql.Open("sqlite", future)
	if _, err := db.Exec("UPDATE meta SET value = '99' WHERE key = 'schema_version'"); err != nil {
		t.Fatal(err)
	}
	db.Close()

	tests := []struct {
		name, path, want string
		notRecording     bool
	}{
		{"missing", filepath.Join(dir, "nope.db"), "no such file", false},
		{"garbage", garbage, "not a tare recording", true},
		{"empty", empty, "not a tare recording", true},
		{"foreign sqlite", foreign, "not a tare recording", true},
		{"newer schema", future, "upgrade tare", false},
		{"truncated", truncated, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec, err := Read(context.Background(), tt.path)
			if tt.want == "" { // a damaged file: an error, or fewer samples; never a panic
				if err == nil && len(rec.Samples) > len(ss) {
					t.Errorf("truncated file gave %d samples", len(rec.Samples))
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Read(%s) error %v, want it to say %q", tt.name, err, tt.want)
			}
			if errors.Is(err, ErrNotRecording) != tt.notRecording {
				t.Errorf("errors.Is(ErrNotRecording) = %v", !tt.notRecording)
			}
		})
	}
	if _, err := Create(context.Background(), good, meta); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("Create over an existing file: %v", err)
	}
}

// TestFullDisk: when the disk fills up, Append fails with a clear error and the file keeps every sample
// written before.
func TestFullDisk(t *testing.T) {
	testenv.NeedRoot(t, "mounting a small tmpfs")
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=160k", "tmpfs", dir).CombinedOutput(); err != nil {
		testenv.Unavailable(t, "cannot mount tmpfs: %v %s", err, out)
	}
	defer func() { _ = exec.Command("umount", dir).Run() }()
	meta, ss := liveSamples(t, 3)
	path := filepath.Join(dir, "full.db")
	ctx := context.Background()
	w, err := Create(ctx, path, meta)
	if err != nil {
		t.Fatal(err)
	}
	var appendErr error
	written := 0
	for i := 0; i < 100000 && appendErr == nil; i++ {
		x := ss[i%len(ss)]
		x.Seq = i
		x.New = nil
		if appendErr = w.Append(ctx, x); appendErr == nil {
			written++
		}
	}
	_ = w.Close()
	if appendErr == nil {
		t.Fatal("160 KiB never filled up")
	}
	if !strings.Contains(appendErr.Error(), "full") || !strings.Contains(appendErr.Error(), "keeps the") {
		t.Errorf("full-disk error does not say what happened: %v", appendErr)
	}
	rec, err := Read(ctx, path)
	if err != nil {
		t.Fatalf("recording unreadable after a full disk: %v", err)
	}
	if len(rec.Samples) != written {
		t.Errorf("read %d samples, %d were committed before the disk filled", len(rec.Samples), written)
	}
}

// foreignSQLite writes a SQLite file that is not tare's (one table of users) in dir and returns its path.
func foreignSQLite(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "foreign.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("CREATE TABLE users(id INTEGER, name TEXT)"); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestPathWithURICharacters: a recording whose name holds '#', '?' or '%' is written to and read from that
// file, not to a file named after what comes before them (the SQLite URI would end at '#' or '?').
func TestPathWithURICharacters(t *testing.T) {
	t.Parallel()
	meta, ss := liveSamples(t, 3)
	dir := t.TempDir()
	for _, name := range []string{"a#b.db", "c?d=1.db", "e%23f.db", "g%.db"} {
		path := filepath.Join(dir, name)
		writeRecording(t, path, meta, ss, nil)
		if _, err := os.Stat(path); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		rec, err := Read(context.Background(), path)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if len(rec.Samples) != len(ss) {
			t.Errorf("%s: read %d samples, wrote %d", name, len(rec.Samples), len(ss))
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if n := e.Name(); !strings.HasSuffix(n, "-wal") && !strings.HasSuffix(n, "-shm") { // SQLite's own
			names = append(names, n)
		}
	}
	if len(names) != 4 {
		t.Errorf("the directory holds %q, want the four recordings (and their -wal and -shm) only", names)
	}
}
