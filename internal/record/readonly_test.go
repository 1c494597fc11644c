package record

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tare-dev/tare/internal/testenv"
)

// dirFiles lists the names in dir.
func dirFiles(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

// TestReadWritesNothing: a finished recording is one file, and reading it leaves the directory as it was
// (no -wal, no -shm) and the file byte for byte the same.
func TestReadWritesNothing(t *testing.T) {
	t.Parallel()
	meta, ss := liveSamples(t, 4)
	dir := t.TempDir()
	path := filepath.Join(dir, "r.db")
	writeRecording(t, path, meta, ss, nil)
	if got := dirFiles(t, dir); !slices.Equal(got, []string{"r.db"}) {
		t.Fatalf("a finished recording left %v, want the one file", got)
	}
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := Read(context.Background(), path)
	if err != nil || len(rec.Samples) != len(ss) {
		t.Fatalf("read %d samples (%v), want %d", len(rec.Samples), err, len(ss))
	}
	if got := dirFiles(t, dir); !slices.Equal(got, []string{"r.db"}) {
		t.Errorf("reading left %v beside the recording", got)
	}
	after, _ := os.ReadFile(path)
	if !bytes.Equal(before, after) {
		t.Error("reading changed the recording")
	}
}

// TestReadOnlyMount: a good recording on a read-only bind mount (a mounted archive, a CI artefact) is read,
// whole, both finished and cut short by a killed writer (its last samples in FILE-wal).
func TestReadOnlyMount(t *testing.T) {
	testenv.NeedRoot(t, "a read-only bind mount needs root")
	meta, ss := liveSamples(t, 4)
	src := t.TempDir()
	writeRecording(t, filepath.Join(src, "finished.db"), meta, ss, nil)
	killed := filepath.Join(src, "killed.db")
	committed := recordThenKill(t, killed, 5)
	if _, err := os.Stat(killed + "-wal"); err != nil {
		t.Fatalf("the killed writer left no WAL to test with: %v", err)
	}
	ro := t.TempDir()
	if err := syscall.Mount(src, ro, "", syscall.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(ro, syscall.MNT_DETACH) })
	if err := syscall.Mount("", ro, "", syscall.MS_BIND|syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ro, "probe"), nil, 0o600); err == nil {
		t.Fatal("the read-only mount takes writes")
	}
	before := dirFiles(t, src)
	rec, err := Read(context.Background(), filepath.Join(ro, "finished.db"))
	if err != nil || len(rec.Samples) != len(ss) {
		t.Errorf("finished recording on a read-only mount: %d samples, %v; want %d", len(rec.Samples), err, len(ss))
	}
	rec, err = Read(context.Background(), filepath.Join(ro, "killed.db"))
	if err != nil || len(rec.Samples) < committed {
		t.Errorf("killed writer's recording on a read-only mount: %d samples, %v; want at least the %d committed", len(rec.Samples), err, committed)
	}
	if after := dirFiles(t, src); !slices.Equal(before, after) {
		t.Errorf("the directory held %v, and %v after reading", before, after)
	}
}

// TestReadKilledLeavesNothing: reading a recording whose writer was killed reads every committed sample
// and changes neither the file, nor its WAL, nor the directory.
func TestReadKilledLeavesNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "killed.db")
	committed := recordThenKill(t, path, 5)
	before := dirFiles(t, dir)
	db, _ := os.ReadFile(path)
	wal, _ := os.ReadFile(path + "-wal")
	rec, err := Read(context.Background(), path)
	if err != nil || len(rec.Samples) < committed {
		t.Fatalf("read %d samples (%v), %d were committed", len(rec.Samples), err, committed)
	}
	if after := dirFiles(t, dir); !slices.Equal(before, after) {
		t.Errorf("the directory held %v, and %v after reading", before, after)
	}
	db2, _ := os.ReadFile(path)
	wal2, _ := os.ReadFile(path + "-wal")
	if !bytes.Equal(db, db2) || !bytes.Equal(wal, wal2) {
		t.Error("reading changed the recording or its WAL")
	}
}

// TestReadFIFO: a FIFO given as a recording is refused at once, saying what it is, instead of waiting
// for a writer.
func TestReadFIFO(t *testing.T) {
	t.Parallel()
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := Read(context.Background(), fifo)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "FIFO") || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("reading a FIFO: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("reading a FIFO as a recording blocks")
	}
	for _, p := range []string{"/dev/null", t.TempDir()} {
		if _, err := Read(context.Background(), p); err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("reading %s: %v", p, err)
		}
	}
}

// recordThenKill runs a recorder child until it has committed n samples, kills it (SIGKILL) and returns
// how many it had committed.
func recordThenKill(t *testing.T, path string, n int) int {
	t.Helper()
	self, _ := os.Executable()
	cmd := exec.Command(self, "-test.run=^$")
	cmd.Env = append(os.Environ(), envChild+"="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	committed := 0
	var acc string
	for committed < n {
		k, err := out.Read(buf)
		if err != nil {
			t.Fatalf("recorder stopped early: %v", err)
		}
		acc += string(buf[:k])
		lines := strings.Fields(acc)
		if c, err := strconv.Atoi(lines[len(lines)-1]); err == nil {
			committed = c
		}
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	return committed
}
