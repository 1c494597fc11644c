package kernel

import (
	"os"

	"golang.org/x/sys/unix"
)

// PinnedFile is a pseudo-file kept open and re-read from offset 0 each time, into a buffer that grows to
// fit: one pread per reading instead of open, read and close. It suits files that cannot block (see
// rawio.go). It is not safe for concurrent use.
type PinnedFile struct {
	fd  int
	buf []byte
}

// OpenPinned opens path for repeated reading; the error is an *os.PathError.
func OpenPinned(path string) (*PinnedFile, error) {
	fd, err := rawOpen(path, unix.O_RDONLY)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return &PinnedFile{fd: fd, buf: make([]byte, 16<<10)}, nil
}

// Read returns the file's whole contents now. The slice is the file's buffer: it is valid until the next
// Read.
func (p *PinnedFile) Read() ([]byte, error) {
	for {
		n, err := rawPread(p.fd, p.buf)
		if err != nil {
			return nil, err
		}
		if n < len(p.buf) || len(p.buf) >= 4<<20 {
			return p.buf[:n], nil
		}
		p.buf = make([]byte, 2*len(p.buf)) // the file did not fit: read it again whole
	}
}

// Close closes the file.
func (p *PinnedFile) Close() {
	rawClose(p.fd)
}
