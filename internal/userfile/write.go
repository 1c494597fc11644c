package userfile

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Outputs are written readable by their owner only: reports, profiles and exports carry command lines,
// as recordings do.
const outputMode = 0o600

// CheckOutput says whether a file can be written at path, before any work that would be lost: its
// directory exists and takes a new file, and path is not a directory.
func CheckOutput(path string) error {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return fmt.Errorf("%s is a directory: give a file name", path)
	}
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	if err != nil || !st.IsDir() {
		return fmt.Errorf("directory %s does not exist", dir)
	}
	f, err := os.CreateTemp(dir, ".tare-check-*")
	if err != nil {
		return fmt.Errorf("cannot write in %s: %w", dir, err)
	}
	f.Close()
	return os.Remove(f.Name())
}

// Write writes the file at path with what fill writes, through a temporary file in the same directory
// renamed into place, so a failure leaves no half-written file behind; the file is its owner's alone.
func Write(path string, fill func(io.Writer) error) error { return WriteMode(path, outputMode, fill) }

// WriteMode is Write for a file others may read or run (an image archive, a program): the file gets mode.
func WriteMode(path string, mode os.FileMode, fill func(io.Writer) error) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".tare-"+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	defer func() { _ = os.Remove(f.Name()) }()
	if err := fill(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// Produce makes the file at path with create, which is given a temporary path in the same directory to
// create (a program `go build -o` writes, say), renamed into place once create succeeds: a failure or a
// concurrent maker leaves no half-made file at path. The temporary name is unique, so two processes may
// make the same file at once; the last rename wins whole.
func Produce(path string, create func(tmp string) error) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".tare-"+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	f.Close()
	defer func() { _ = os.Remove(tmp) }() // gone once renamed
	if err := create(tmp); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
