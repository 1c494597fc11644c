package record

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"
)

// fixture is a recording captured on a real machine (internal/cli/testdata/recording.db), as bytes.
func fixture(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile("../cli/testdata/recording.db")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// withMeta is path holding the fixture with one meta value changed.
func withMeta(t *testing.T, good []byte, path, key, value string) string {
	t.Helper()
	if err := os.WriteFile(path, good, 0o600); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("UPDATE meta SET value = ? WHERE key = ?", value, key); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestOpenFileChecks: each way a file can fail to be a readable tare recording gives its own error,
// matching its sentinel, starting in lower case after the path and saying what the user can do.
func TestOpenFileChecks(t *testing.T) {
	t.Parallel()
	good := fixture(t)
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	flip := func(off int) []byte {
		b := append([]byte(nil), good...)
		b[off] ^= 0xff
		return b
	}
	foreign := foreignSQLite(t, dir)

	tests := []struct {
		name, path string
		is         error
		says       []string
	}{
		{"missing", filepath.Join(dir, "nope.db"), fs.ErrNotExist, []string{"opening the recording", "no such file"}},
		{"not sqlite", write("text.db", []byte("this is not a database at all, just text\n")), ErrNotRecording,
			[]string{"not a tare recording (not a SQLite file; record one with tare measure --record FILE)"}},
		{"empty", write("empty.db", nil), ErrNotRecording, []string{"not a SQLite file"}},
		{"foreign sqlite", foreign, ErrNotRecording, []string{"not a tare recording (a SQLite file without tare's meta table; record one with"}},
		// Page 1's b-tree page type (offset 100) and the header's payload fraction (offset 21) overwritten.
		{"corrupt schema page", write("corrupt.db", flip(100)), ErrDamaged,
			[]string{"damaged recording (reading its meta table: database disk image is malformed", "restore it from a copy, or record one"}},
		{"corrupt header", write("header.db", flip(21)), ErrDamaged, []string{"damaged recording", "restore it from a copy"}},
		{"wrong format", withMeta(t, good, filepath.Join(dir, "format.db"), "format", "tare-experiment"), ErrNotRecording,
			[]string{`not a tare recording (its meta table says format="tare-experiment", not tare-recording; record one with`}},
		{"newer version", withMeta(t, good, filepath.Join(dir, "newer.db"), "schema_version", "99"), ErrNewerVersion,
			[]string{fmt.Sprintf("recording schema version 99 is newer than this tare reads (it reads 1 to %d): upgrade tare", SchemaVersion)}},
		{"version no tare writes", withMeta(t, good, filepath.Join(dir, "zero.db"), "schema_version", "0"), ErrDamaged,
			[]string{`damaged recording (schema version "0", which no tare writes): restore it from a copy`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			db, _, err := OpenFile(context.Background(), tt.path, "mode=ro", recordingKind)
			if err == nil {
				db.Close()
				t.Fatalf("OpenFile(%s) accepted it", tt.path)
			}
			if !errors.Is(err, tt.is) {
				t.Errorf("error %q does not match %v", err, tt.is)
			}
			for _, s := range tt.says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %q", err, s)
				}
			}
			msg := strings.TrimPrefix(err.Error(), tt.path+": ")
			if r := []rune(msg)[0]; unicode.IsUpper(r) {
				t.Errorf("error %q starts in upper case", msg)
			}
			for _, other := range []error{ErrNotRecording, ErrDamaged, ErrNewerVersion} {
				if !errors.Is(other, tt.is) && errors.Is(err, other) {
					t.Errorf("error %q also matches %v", err, other)
				}
			}
		})
	}
}

// TestOpenFileAccepts: the real recording opens, with its meta and version.
func TestOpenFileAccepts(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "r.db")
	if err := os.WriteFile(path, fixture(t), 0o600); err != nil {
		t.Fatal(err)
	}
	db, meta, err := OpenFile(context.Background(), path, "mode=ro", recordingKind)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if meta.Version < 1 || meta.Version > SchemaVersion || meta.Values["format"] != formatName || meta.Values["meta"] == "" {
		t.Errorf("meta of a real recording: version %d, %v", meta.Version, meta.Values)
	}
}
