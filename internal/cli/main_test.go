package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tare-dev/tare/internal/lab"
	"github.com/tare-dev/tare/internal/lab/labtest"
	"github.com/tare-dev/tare/internal/summary"
	"github.com/tare-dev/tare/internal/testenv"
	"github.com/tare-dev/tare/internal/testload"
)

// envRunCLI makes the test binary run tare itself (as another user, say) instead of the tests.
const envRunCLI = "TARE_TEST_RUN_CLI"

func TestMain(m *testing.M) {
	testload.Main()
	if os.Getenv(envRunCLI) != "" || lab.ReaperAsked() { // tare itself, or an experiment's reaper
		if err := ExecuteAs(context.Background(), os.Args[0], os.Args[1:], os.Stdin, os.Stdout, os.Stderr); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	code := runTests(m)
	labtest.ReleaseReaper() // the tests' labs are down: their reaper has nothing to do
	os.Exit(code)
}

// runTests runs the tests with $KUBECONFIG naming a file of the run's own, absent until a test makes it:
// tare lab up adds the lab's context to the user's kubeconfig, and no test may touch the real
// ~/.kube/config (tests run as root, with root's). Tests that pass --kubeconfig, or set $KUBECONFIG or
// $HOME themselves, see no difference.
func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "tare-cli-kubeconfig-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if err := os.Setenv("KUBECONFIG", filepath.Join(dir, "config")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := m.Run()
	if err := stopSharedLab(nil); err != nil && code == 0 { // before its kubeconfig goes
		code = 1
	}
	return code
}

// run executes tare in-process.
func run(ctx context.Context, args ...string) (stdout, stderr string, err error) {
	var out, errb bytes.Buffer
	err = Execute(ctx, args, strings.NewReader(""), &out, &errb)
	return out.String(), errb.String(), err
}

// measureJSON runs tare measure -o json and decodes the summary.
func measureJSON(t *testing.T, args ...string) summary.Summary {
	t.Helper()
	return summaryJSON(t, "measure", args...)
}

// summaryJSON runs measure or report with -o json and decodes the summary.
func summaryJSON(t *testing.T, verb string, args ...string) summary.Summary {
	t.Helper()
	out, errOut, err := run(context.Background(), append([]string{verb, "-o", "json"}, args...)...)
	if err != nil {
		t.Fatalf("tare %s %v: %v\nstderr: %s", verb, args, err, errOut)
	}
	var s summary.Summary
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("decoding measure output: %v\n%s", err, out)
	}
	return s
}

// helper is a running testload process (testload.Proc), under the short names the CLI tests use.
type helper struct{ *testload.Proc }

func startHelper(t *testing.T, mode string, args ...string) *helper {
	t.Helper()
	return &helper{testload.Launch(t, mode, args...)}
}

func (h *helper) pid() int { return h.Pid() }

// line reads one line of the helper's output, failing after the deadline.
func (h *helper) line(t *testing.T, timeout time.Duration) string {
	t.Helper()
	return h.Line(t, timeout)
}

// stop closes the helper's stdin and waits for it to end.
func (h *helper) stop() { h.Stop() }

func findProcess(s summary.Summary, pid int) (summary.Process, bool) {
	for _, p := range s.Processes {
		if p.PID == pid {
			return p, true
		}
	}
	return summary.Process{}, false
}

func requireRoot(t *testing.T) {
	t.Helper()
	testenv.NeedRoot(t, "taskstats and the proc connector require CAP_NET_ADMIN")
}

// requireTiming skips tests whose ground truth is the timing of real processes when the run is -short:
// make test runs the race detector in a -short pass, where instrumented helpers start ten times slower and
// tare itself runs ten times slower than it does for users, and runs every test in a second pass without it.
func requireTiming(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: real-process timing tests run in the pass without the race detector")
	}
}
