package lab

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tare-dev/tare/internal/component"
	"github.com/tare-dev/tare/internal/lab/machine"
	"github.com/tare-dev/tare/internal/testenv"
)

// The lab package's tests get their labs here. Tests of other packages use internal/lab/labtest, which
// these cannot import (it imports lab).

// tempLabDir is a new lab directory (short: containerd's socket paths must fit in 108 bytes) that the
// test's clean-up stops and removes.
func tempLabDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "tare-lab-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = Down(context.Background(), dir, false)
		_ = os.RemoveAll(dir)
	})
	if err := WatchWithProcess(dir); err != nil { // should the binary die first
		t.Fatal(err)
	}
	return dir
}

// waitForPorts waits until no other lab holds the lab's ports (other tests start single-node labs).
func waitForPorts(ctx context.Context, t *testing.T) {
	t.Helper()
	if err := WaitPortsFree(ctx, UpOptions{}); err != nil {
		t.Fatal(err)
	}
}

// upLab starts a real lab with opts in a tempLabDir, stopped with the test binary, once no other lab holds
// the ports, and returns it with a context that ends after timeout or with the test. It skips in -short
// mode, without root when the lab has a node, and when the lab's components are not installed (an
// API-server-only lab installs its two).
func upLab(t *testing.T, opts UpOptions, timeout time.Duration) (context.Context, *State) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a real lab")
	}
	if !opts.ControlPlaneOnly && !opts.APIServerOnly {
		testenv.NeedRoot(t, "the lab's nodes need root: network namespaces, containerd, kubelet")
	}
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	t.Cleanup(cancel)
	if opts.APIServerOnly {
		if err := InstallAPIServer(ctx); errors.Is(err, ErrPrerequisite) {
			testenv.Unavailable(t, "installing etcd and kube-apiserver: %v", err)
		} else if err != nil {
			t.Fatal(err)
		}
	} else if _, err := findBinaries("", component.Names(component.Entry.InLab)); err != nil {
		testenv.Unavailable(t, "the lab is not installed (tare lab install): %v", err)
	}
	waitForPorts(ctx, t)
	opts.Dir, opts.StopWithCaller = tempLabDir(t), true
	st, err := Up(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	return ctx, st
}

// bareLab records a lab of nodes nodes in a tempLabDir as Up does before it starts anything (its state,
// with the machine's network namespaces, sysctls and directories as they were, and its logs directory),
// once no other lab runs: Down removes the KUBE-/CNI- chains, never while another lab runs. It skips in
// -short mode, without root and when the machine cannot run the nodes.
func bareLab(ctx context.Context, t *testing.T, nodes int) *lab {
	t.Helper()
	if testing.Short() {
		t.Skip("changes the machine's network")
	}
	testenv.NeedRoot(t, "network namespaces, links and routes need root")
	opts := UpOptions{Nodes: nodes}
	if _, err := opts.checkNodes(); err != nil {
		testenv.Unavailable(t, "%v", err)
	}
	waitForPorts(ctx, t)
	opts.Dir = tempLabDir(t)
	l := &lab{opts: opts, p: paths{opts.Dir}, start: time.Now()}
	l.st = &State{Version: stateVersion, Dir: opts.Dir, Started: l.start, NetnsBefore: machine.NetnsNames(),
		Sysctls: machine.ReadSysctls(), MadeDirs: machine.AbsentDirs(machine.Dirs)}
	if err := os.MkdirAll(l.p.join("logs"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := l.st.save(); err != nil {
		t.Fatal(err)
	}
	return l
}

// at is the lab in dir as its verbs see it: each reads the state there itself (Lab.fresh), so a lab that
// is not there, or not whole, gets the verb's own error.
func at(dir string) *Lab {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	return &Lab{Dir: dir}
}
