package record

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// A reader of a recording never writes beside it (issue: report, export, diff and explain left FILE-wal
// and FILE-shm next to the files they read, and a good recording in a read-only directory could not be
// read at all). A finished recording is one self-contained file in rollback-journal mode (Writer.Finish):
// it is opened immutable, so SQLite creates no side file and takes no lock. A recording whose writer did
// not finish (killed, or still running) has its last samples in FILE-wal: the file and its log are copied
// into a private directory and read there, so the copy's -shm and any recovery stay out of the user's.

// readOnlySource is what a read-only open of path reads: the DSN, and a function removing a private copy.
func readOnlySource(path, query string) (dsn string, cleanup func(), err error) {
	wal := path + "-wal"
	if fi, err := os.Stat(wal); err != nil || fi.Size() == 0 {
		return DSN(path, query+"&immutable=1"), func() {}, nil
	}
	dir, err := os.MkdirTemp("", "tare-recording-")
	if err != nil {
		return "", nil, fmt.Errorf("copying %s, whose writer did not finish, to read it: %w", path, err)
	}
	cleanup = func() { _ = os.RemoveAll(dir) }
	cp := filepath.Join(dir, "recording")
	for src, dst := range map[string]string{path: cp, wal: cp + "-wal"} {
		if err := copyFile(src, dst); err != nil {
			cleanup()
			return "", nil, fmt.Errorf("copying %s, whose writer did not finish, to read it: %w", path, err)
		}
	}
	return DSN(cp, query), cleanup, nil
}

// copyFile copies the regular file src to dst (created private).
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
