package labtest

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/tare-dev/tare/internal/lab"
)

// portsWait bounds WaitForPorts: another package's lab test ends within minutes.
const portsWait = 5 * time.Minute

// TempDir is a new lab directory under the system's temporary directory (short: containerd's socket
// paths must fit in 108 bytes) that the test's clean-up stops (lab.Down) and removes, and the binary's
// reaper (reaper.go) stops should the binary die first.
func TempDir(t testing.TB) string {
	t.Helper()
	dir, done, err := NewDir()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = done() })
	return dir
}

// NewDir is TempDir for a lab that outlives one test (a package's shared lab): done stops the lab, if one
// runs, and removes the directory; the binary's reaper does should the binary die first.
func NewDir() (dir string, done func() error, err error) {
	if dir, err = newDir(); err != nil {
		return "", nil, err
	}
	if err := lab.WatchWithProcess(dir); err != nil {
		return "", nil, errors.Join(err, os.RemoveAll(dir))
	}
	return dir, func() error { return remove(dir) }, nil
}

// WaitForPorts waits, up to five minutes or until ctx ends, until no other lab holds the lab's ports
// (another test's, or another package's tests' running meanwhile), and fails the test otherwise.
func WaitForPorts(ctx context.Context, t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, portsWait)
	defer cancel()
	if err := lab.WaitPortsFree(ctx, lab.UpOptions{}); err != nil {
		t.Fatal(err)
	}
}

// APIServer starts the lab's etcd and kube-apiserver and nothing else (lab.Up's API-server-only lab;
// installed the first time, which builds kube-apiserver) in a new directory, once no other lab holds
// their ports. They end with the calling process (StopWithCaller); stop stops them and removes the
// directory. For a TestMain, which has no testing.TB.
func APIServer(ctx context.Context) (st *lab.State, stop func() error, err error) {
	dir, err := newDir()
	if err != nil {
		return nil, nil, err
	}
	opts := lab.UpOptions{Dir: dir, APIServerOnly: true, StopWithCaller: true}
	if err = lab.WaitPortsFree(ctx, opts); err == nil {
		if err = lab.InstallAPIServer(ctx); err == nil {
			st, err = lab.Up(ctx, opts)
		}
	}
	if err != nil {
		return nil, nil, errors.Join(err, remove(dir))
	}
	return st, func() error { return remove(dir) }, nil
}

func newDir() (string, error) { return os.MkdirTemp("", "tare-lab-") }

// remove stops the lab in dir, if one runs, and removes the directory.
func remove(dir string) error {
	_, err := lab.Down(context.Background(), dir, false)
	if errors.Is(err, lab.ErrNotRunning) {
		err = nil
	}
	return errors.Join(err, os.RemoveAll(dir))
}
