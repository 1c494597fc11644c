// Package userfile opens the files a user names on tare's command line (recordings, density results,
// profiles, audit logs, experiment specs) so that none can hang or fool tare: only a regular file is
// opened (a FIFO waits for a writer that may never come, a device never ends, a directory is no file), and
// a file read whole has a bound, past which it is refused with its size rather than cut short. Outputs
// (reports, profiles, exports) are checked before the work that fills them and written whole, through a
// temporary file renamed into place (Write, the one such writer), readable by their owner only: they carry
// command lines.
//
// It imports only output (a bound's size in messages), so any package may use it. Every reader of a
// file named by the user opens it here, and every output file the user names is written here.
//
// Imports: output
package userfile
