package record

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/tare-dev/tare/internal/userfile"
)

// sqliteMagic opens every SQLite 3 file.
const sqliteMagic = "SQLite format 3\x00"

var (
	// ErrDamaged means a file is SQLite but its schema or tare's meta table cannot be read: cut short,
	// overwritten, or a schema version no tare writes.
	ErrDamaged = errors.New("damaged")
	// ErrNewerVersion means the file was written by a newer tare, with a schema this tare does not read.
	ErrNewerVersion = errors.New("newer than this tare reads")
)

// FileKind is a kind of tare SQLite file: what its meta table says, and how a user makes one. Recordings
// (this package) and experiment files (internal/experiment) are checked by the same OpenFile.
type FileKind struct {
	// Name is what the file is called in errors: "recording", "experiment file".
	Name string
	// Format is the meta table's format value; Version is the newest schema_version this tare reads
	// (versions run from 1).
	Format  string
	Version int
	// Hint says how to make one, for the errors of a file that is not one or is damaged: "record one
	// with tare measure --record FILE".
	Hint string
	// ErrNot is the sentinel that errors for a file not of this kind wrap (ErrNotRecording for recordings).
	ErrNot error
}

// FileMeta is the meta table of a checked file: every key's value, and the schema version parsed.
type FileMeta struct {
	Version int
	Values  map[string]string
}

// recordingKind is a tare recording.
var recordingKind = FileKind{Name: "recording", Format: formatName, Version: SchemaVersion,
	Hint: "record one with tare measure --record FILE", ErrNot: ErrNotRecording}

// OpenFile opens the tare SQLite file at path with the driver options in query (for instance
// "mode=ro&_pragma=busy_timeout(5000)"), after checking that it is a file of kind: a SQLite file (its
// first 16 bytes, before the driver gives a vaguer error), with tare's meta table naming kind's format and
// a schema version from 1 to kind.Version. Errors wrap kind.ErrNot (not a file of this kind), ErrDamaged
// or ErrNewerVersion, or the error opening the file, and say what the user can do. On error nothing is
// left open; otherwise the caller closes the database.
func OpenFile(ctx context.Context, path, query string, kind FileKind) (*sql.DB, FileMeta, error) {
	if err := checkHeader(path, kind); err != nil {
		return nil, FileMeta{}, err
	}
	return openDSN(ctx, path, DSN(path, query), kind)
}

// openDSN opens the SQLite database dsn (the file at path, or a copy of it) and checks its meta table.
func openDSN(ctx context.Context, path, dsn string, kind FileKind) (*sql.DB, FileMeta, error) {
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, FileMeta{}, fmt.Errorf("opening %s %s: %w", kind.Name, path, err)
	}
	meta, err := readMeta(ctx, db, kind)
	if err != nil {
		db.Close()
		return nil, FileMeta{}, fmt.Errorf("%s: %w", path, err)
	}
	return db, meta, nil
}

// checkHeader rejects a file that is not SQLite.
func checkHeader(path string, kind FileKind) error {
	if err := userfile.Check(path, kind.Name); err != nil {
		return err
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("opening %s: %w", kind.Name, err)
	}
	defer f.Close()
	hdr := make([]byte, len(sqliteMagic))
	if _, err := io.ReadFull(f, hdr); err != nil || string(hdr) != sqliteMagic {
		return fmt.Errorf("%s: %w (not a SQLite file; %s)", path, kind.ErrNot, kind.Hint)
	}
	return nil
}

// readMeta reads and checks the meta table of an open SQLite file.
func readMeta(ctx context.Context, db *sql.DB, kind FileKind) (FileMeta, error) {
	damaged := func(err error) error {
		return fmt.Errorf("%w %s (reading its meta table: %w): restore it from a copy, or %s", ErrDamaged, kind.Name, err, kind.Hint)
	}
	var tables int
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'meta'").Scan(&tables); err != nil {
		return FileMeta{}, damaged(err)
	}
	if tables == 0 {
		return FileMeta{}, fmt.Errorf("%w (a SQLite file without tare's meta table; %s)", kind.ErrNot, kind.Hint)
	}
	rows, err := db.QueryContext(ctx, "SELECT key, value FROM meta")
	if err != nil {
		return FileMeta{}, damaged(err)
	}
	defer rows.Close()
	m := FileMeta{Values: map[string]string{}}
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return FileMeta{}, damaged(err)
		}
		m.Values[k] = v
	}
	if err := rows.Err(); err != nil {
		return FileMeta{}, damaged(err)
	}
	if f := m.Values["format"]; f != kind.Format {
		return FileMeta{}, fmt.Errorf("%w (its meta table says format=%q, not %s; %s)", kind.ErrNot, f, kind.Format, kind.Hint)
	}
	raw := m.Values["schema_version"]
	v, err := strconv.Atoi(raw)
	switch {
	case err != nil || v < 1:
		return FileMeta{}, fmt.Errorf("%w %s (schema version %q, which no tare writes): restore it from a copy, or %s", ErrDamaged, kind.Name, raw, kind.Hint)
	case v > kind.Version:
		return FileMeta{}, fmt.Errorf("%s schema version %d is %w (it reads 1 to %d): upgrade tare", kind.Name, v, ErrNewerVersion, kind.Version)
	}
	m.Version = v
	return m, nil
}

// DSN is the SQLite URI of the file at path with the driver options in query. A '#', '?' or '%' in a file
// name would end the name or be read as an escape, so they are percent-encoded: "a#b.db" is a#b.db, not a.
func DSN(path, query string) string {
	d := "file:" + strings.NewReplacer("%", "%25", "#", "%23", "?", "%3f").Replace(path)
	if query != "" {
		d += "?" + query
	}
	return d
}
