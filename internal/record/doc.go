// Package record stores samples in a SQLite file (pure-Go driver modernc.org/sqlite, so tare stays a static
// binary) and reads them back. Each sample is committed in its own transaction in WAL mode, so a kill -9
// leaves a readable file holding every sample up to the last interval. The schema is versioned; see
// SCHEMA.md next to this file. measure, explain and experiment write recordings through the session package's
// Recorder sink; report, explain, diff and export read them.
package record
