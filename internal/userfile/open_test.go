package userfile

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestRefusesWhatIsNotAFile: a FIFO (with no writer: opening it would wait forever), a character device
// and a directory are refused at once, each named for what it is; a missing file says so.
func TestRefusesWhatIsNotAFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{fifo: "a FIFO", "/dev/zero": "a character device", dir: "a directory"} {
		done := make(chan error, 1)
		go func() {
			_, err := ReadAll(path, "density result", 1<<20)
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "not a regular file") {
				t.Errorf("%s: %v, want it refused as %s", path, err, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: reading blocks", path)
		}
	}
	if _, err := Open(filepath.Join(dir, "missing"), "recording"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

// TestReadAllBound: a file within the bound is read whole; one past it is refused with the bound named,
// not cut short into a parse error.
func TestReadAllBound(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, make([]byte, 2048), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadAll(path, "spec", 2048); err != nil || len(b) != 2048 {
		t.Errorf("at the bound: %d bytes, %v", len(b), err)
	}
	if _, err := ReadAll(path, "spec", 1024); err == nil || !strings.Contains(err.Error(), "larger than 1 KiB") {
		t.Errorf("past the bound: %v", err)
	}
}

// TestWrite: an output is its owner's alone, and a fill that fails leaves neither the file nor a temporary
// one behind.
func TestWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "report.html")
	if err := Write(path, func(w io.Writer) error { _, err := io.WriteString(w, "ok"); return err }); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("written file %v, %v: want mode 0600", fi.Mode(), err)
	}
	failed := filepath.Join(dir, "failed.html")
	if err := Write(failed, func(io.Writer) error { return errors.New("no") }); err == nil {
		t.Fatal("a failed fill was written")
	}
	if es, _ := os.ReadDir(dir); len(es) != 1 {
		t.Errorf("after a failed write the directory holds %d entries, want the one good file", len(es))
	}
	for _, bad := range []string{filepath.Join(dir, "missing", "x"), dir} {
		if err := CheckOutput(bad); err == nil {
			t.Errorf("CheckOutput(%s) accepted it", bad)
		}
	}
	if err := CheckOutput(filepath.Join(dir, "new.pb.gz")); err != nil {
		t.Errorf("CheckOutput of a new file in a writable directory: %v", err)
	}
}

// TestWriteMode: a file others may read gets the mode asked for, not the owner's-only default, and its
// content replaces what was there.
func TestWriteMode(t *testing.T) {
	path := filepath.Join(t.TempDir(), "image.tar")
	if err := os.WriteFile(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := WriteMode(path, 0o644, func(w io.Writer) error { _, err := io.WriteString(w, "new"); return err }); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o644 {
		t.Fatalf("written file %v, %v: want mode 0644", fi.Mode(), err)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "new" {
		t.Errorf("file holds %q, %v; want new", b, err)
	}
}

// TestProduce: what create makes at the temporary path is renamed into place; a failed create leaves
// neither the file nor its temporary behind.
func TestProduce(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "program")
	if err := Produce(path, func(tmp string) error { return os.WriteFile(tmp, []byte("built"), 0o755) }); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "built" {
		t.Fatalf("made file holds %q, %v: want what create wrote", b, err)
	}
	if err := Produce(filepath.Join(dir, "failed"), func(string) error { return errors.New("no") }); err == nil {
		t.Fatal("a failed create was renamed into place")
	}
	if es, _ := os.ReadDir(dir); len(es) != 1 {
		t.Errorf("after a failed create the directory holds %d entries, want the one good file", len(es))
	}
}
