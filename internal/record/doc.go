// Package record stores samples in a SQLite file (pure-Go driver modernc.org/sqlite, so tare stays a static
// binary) and reads them back. Each sample is committed in its own transaction in WAL mode, so a kill -9
// leaves a readable file holding every sample up to the last interval. The schema is versioned; see
// SCHEMA.md next to this file. measure, explain and experiment write recordings through the session package's
// Recorder sink; report, explain, diff and export read them.
//
// OpenFile is the one check of tare's SQLite files, for recordings and for the experiment file
// (internal/experiment): a SQLite file, tare's meta table, the right format, a schema version this tare
// reads; each failure is its own error (ErrNotRecording or the kind's own sentinel, ErrDamaged,
// ErrNewerVersion) saying what to do. A new kind of tare file describes itself with a FileKind and opens
// through OpenFile; a new table or column goes in schema.go (and SCHEMA.md), with SchemaVersion raised
// when an older tare could not read the file.
//
// It imports sample (the data it stores), kernel (the resource counters a sample carries), blockio (the
// window's block I/O, stored once at its end), userfile (a recording is a regular file) and the SQLite driver, and
// nothing of the verbs. Readers never write beside a recording (readonly.go).
//
// Imports: blockio, kernel, sample, userfile
package record
