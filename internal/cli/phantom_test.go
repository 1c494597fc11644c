package cli

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/tare-dev/tare/internal/summary"
	"github.com/tare-dev/tare/internal/testenv"
)

// TestMeasurePhantomChildren is issue 14's phantom scenario: a long-lived parent P started a child C before
// the window, C's own child burned 1.5 s of CPU and ended before the window, and C exits inside the window,
// so P's cutime jumps by 1.5 s although that CPU was spent before. Nothing of P's tree may be credited with
// it, and the groups must not exceed the node reference. Ground truth: P's tree does nothing in the window
// but exit and reap.
func TestMeasurePhantomChildren(t *testing.T) {
	requireTiming(t)
	for _, unpriv := range []bool{false, true} {
		t.Run("unprivileged="+strconv.FormatBool(unpriv), func(t *testing.T) {
			if !unpriv {
				testenv.NeedRoot(t, "taskstats and the proc connector need CAP_NET_ADMIN")
			}
			p := startHelper(t, "nest", "1500ms")
			if got := p.line(t, 30*time.Second); got != "ready" {
				t.Fatalf("nest helper printed %q, want ready", got)
			}
			args := []string{"measure", "-o", "json", "--duration", "4s", "--interval", "250ms"}
			if unpriv {
				args = append(args, "--unprivileged")
			}
			type result struct {
				out, errOut string
				err         error
			}
			done := make(chan result, 1)
			go func() {
				out, errOut, err := run(context.Background(), args...)
				done <- result{out, errOut, err}
			}()
			time.Sleep(1500 * time.Millisecond) // inside the window: C exits and P reaps it
			p.Send(t, "go")
			if got := p.line(t, 10*time.Second); got != "reaped" {
				t.Fatalf("nest helper printed %q, want reaped", got)
			}
			r := <-done
			if r.err != nil {
				t.Fatalf("measure: %v\n%s", r.err, r.errOut)
			}
			var s summary.Summary
			if err := json.Unmarshal([]byte(r.out), &s); err != nil {
				t.Fatal(err)
			}
			tree := treeCPU(s, p.pid())
			t.Logf("P's tree: %.1fm; %s", tree, s.Reconcile.Explanation)
			// The phantom is 1500 ms over 4 s = 375m; C's own exit costs well under a millisecond.
			if tree > 10 {
				t.Errorf("P's tree was credited %.1fm in a window where it only exited and reaped (phantom CPU from before the window)", tree)
			}
			if s.Reconcile.Unattributed < -s.Reconcile.Resolution {
				t.Errorf("groups exceed the node reference by %.1fm (resolution %.1fm): %s", -s.Reconcile.Unattributed, s.Reconcile.Resolution, s.Reconcile.Explanation)
			}
		})
	}
}

// treeCPU is the CPU (millicores) credited to the process pid, its children's rows and its short-lived
// children.
func treeCPU(s summary.Summary, pid int) float64 {
	var total float64
	for _, p := range s.Processes {
		if p.PID == pid || p.PPID == pid {
			total += p.CPU.Mean + p.ChildrenCPU
		}
	}
	for _, c := range s.Children {
		if c.ParentPID == pid {
			total += c.CPU
		}
	}
	return total
}
