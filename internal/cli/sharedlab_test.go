package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tare-dev/tare/internal/lab/labtest"
)

// shared is the package's shared lab: started by the first test that asks for it (sharedLab) and kept for
// the next one that asks for the same lab, which saves a lab's start and stop (about 30 s) for every such
// test after the first. Most ask for a one-node lab (tare lab up with no flags); the tests that deploy tare
// onto three nodes share a three-node one. The tests that use it leave it as they found it: each removes
// the namespaces and objects it made, and checks that it did. A test file's tests run in the order they
// are written, files in the order of their names: tests that share a lab sit side by side.
var shared struct {
	dir   string
	flags string // what tare lab up was given, joined by spaces
	done  func() error
}

// sharedLab is the package's shared lab started with tare lab up FLAGS, started now if none such runs (a
// shared lab of other flags is stopped first): its directory and kubeconfig. A test that fails while using
// it stops it at its end (what the test left could fail the next one).
func sharedLab(ctx context.Context, t *testing.T, flags ...string) (dir, kubeconfig string) {
	t.Helper()
	checkLab(t)
	want := strings.Join(flags, " ")
	if shared.dir != "" && shared.flags != want {
		_ = stopSharedLab(t)
	}
	if shared.dir != "" {
		if r, err := statusOf(ctx, shared.dir); err != nil || !r.Healthy {
			if err == nil {
				err = fmt.Errorf("unhealthy: %+v (API: %s)", r.Components, r.APIError)
			}
			t.Logf("the shared lab is not whole (%v): starting it again", err)
			_ = stopSharedLab(t)
		}
	}
	if shared.dir == "" {
		dir, done, err := labtest.NewDir()
		if err != nil {
			t.Fatal(err)
		}
		labtest.WaitForPorts(ctx, t)
		if _, errOut, err := run(ctx, append([]string{"lab", "up", "--dir", dir}, flags...)...); err != nil {
			t.Fatalf("lab up %s (the shared lab): %v\nstderr:\n%s", want, errors.Join(err, done()), errOut)
		}
		shared.dir, shared.flags, shared.done = dir, want, done
	}
	t.Cleanup(func() {
		if t.Failed() {
			_ = stopSharedLab(t)
		}
	})
	return shared.dir, filepath.Join(shared.dir, "kubeconfig")
}

// stopSharedLab stops the shared lab, if one runs, and removes its directory: before a test starts a lab
// of its own (one lab at a time holds the lab's ports and node network: requireLab) and after the tests
// (TestMain, with t nil: a failure is printed and returned).
func stopSharedLab(t testing.TB) error {
	if shared.dir == "" {
		return nil
	}
	err := shared.done()
	shared.dir, shared.flags, shared.done = "", "", nil
	switch {
	case err == nil:
	case t != nil:
		t.Errorf("stopping the shared lab: %v", err)
	default:
		fmt.Fprintf(os.Stderr, "stopping the shared lab: %v\n", err)
	}
	return err
}
