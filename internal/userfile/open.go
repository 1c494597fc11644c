package userfile

import (
	"fmt"
	"io"
	"os"

	"github.com/tare-dev/tare/internal/output"
)

// Check says whether path is a regular file; what names the file in the message ("recording").
func Check(path, what string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("opening the %s: %w", what, err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is %s, not a regular file: give the path of a %s file", path, kind(fi.Mode()), what)
	}
	return nil
}

// Open opens path for reading once Check passes.
func Open(path, what string) (*os.File, error) {
	if err := Check(path, what); err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opening the %s: %w", what, err)
	}
	return f, nil
}

// ReadAll reads the regular file path whole; a file larger than limit bytes is refused, saying so.
func ReadAll(path, what string, limit int64) ([]byte, error) {
	f, err := Open(path, what)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("reading the %s %s: %w", what, path, err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s is larger than %s, more than any %s tare writes: is it the right file?", path, output.Limit(limit), what)
	}
	return b, nil
}

// kind names the type of a file that is not regular.
func kind(m os.FileMode) string {
	switch {
	case m&os.ModeNamedPipe != 0:
		return "a FIFO (named pipe)"
	case m&os.ModeCharDevice != 0:
		return "a character device"
	case m&os.ModeDevice != 0:
		return "a block device"
	case m.IsDir():
		return "a directory"
	case m&os.ModeSocket != 0:
		return "a socket"
	}
	return "a special file"
}
