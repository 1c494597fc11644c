package sample

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tare-dev/tare/internal/testenv"
)

// TestExecSources: with either source of process starts, the exec tracepoints or the proc connector, and
// after the switch from the second to the first that the default makes once process starts pay for it, a
// shell that lives 50 ms between two samples is a short-lived process of the second, with the arguments
// and the parent the test gave it.
func TestExecSources(t *testing.T) {
	testenv.NeedRoot(t, "taskstats, the proc connector and BPF need root")
	for _, tc := range []struct {
		mode         ExecSource
		before, want string
	}{
		{ExecTracepoints, "taskstats+tracepoints", "taskstats+tracepoints"},
		{ExecConnector, "taskstats+connector", "taskstats+connector"},
		{ExecAuto, "taskstats+connector", "taskstats+tracepoints"},
	} {
		name := string(tc.mode)
		if name == "" {
			name = "auto"
		}
		t.Run(name, func(t *testing.T) {
			s, err := New(context.Background(), Options{Interval: time.Second, Detail: time.Second, ExecSource: tc.mode}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if got := s.Meta().ExitSource; got != tc.before {
				t.Fatalf("exit source %q, want %q (limitations: %q)", got, tc.before, s.Meta().Limitations)
			}
			if _, err := s.Sample(); err != nil {
				t.Fatal(err)
			}
			// Enough starts for the default to switch, the last of them caught by the connector.
			for range switchAfterStarts {
				if err := exec.Command("true").Run(); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := s.Sample(); err != nil {
				t.Fatal(err)
			}
			if got := s.Meta().ExitSource; got != tc.want {
				t.Fatalf("after %d process starts: exit source %q, want %q", switchAfterStarts, got, tc.want)
			}
			sh := exec.Command("sh", "-c", "sleep 0.05", "probe")
			if err := sh.Run(); err != nil {
				t.Fatal(err)
			}
			smp, err := s.Sample()
			if err != nil {
				t.Fatal(err)
			}
			for _, info := range smp.New {
				if info.Key.PID != sh.Process.Pid {
					continue
				}
				if info.Cmdline != "sh -c sleep 0.05 probe" || info.PPID != os.Getpid() || info.ExitSeq != info.BornSeq {
					t.Errorf("the shell is %+v: want its arguments, the test as parent, born and ended in one sample", info)
				}
				return
			}
			t.Errorf("the shell %d is not among the %d new processes of the sample", sh.Process.Pid, len(smp.New))
		})
	}
}

// TestExecSourceInPIDNamespace: with a /proc of a PID namespace of its own, where the PIDs of the
// tracepoints and of the proc connector (the host's) are not the ones it lists, the sampler uses neither and
// says why. The test runs itself again
// under unshare(1) with a new PID namespace and its own /proc.
func TestExecSourceInPIDNamespace(t *testing.T) {
	testenv.NeedRoot(t, "unshare --pid needs root")
	if os.Getenv("TARE_TEST_IN_PIDNS") == "1" {
		s, err := New(context.Background(), Options{Interval: time.Second, Detail: time.Second}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		m := s.Meta()
		if m.ExitSource != "taskstats" || !slices.ContainsFunc(m.Limitations, func(l string) bool {
			return strings.Contains(l, "PID namespace of its own")
		}) {
			t.Errorf("in a PID namespace of its own: exit source %q, limitations %q", m.ExitSource, m.Limitations)
		}
		return
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		testenv.Unavailable(t, "unshare not installed (util-linux)")
	}
	cmd := exec.Command("unshare", "--pid", "--fork", "--mount-proc", os.Args[0], "-test.run=^TestExecSourceInPIDNamespace$", "-test.v")
	cmd.Env = append(os.Environ(), "TARE_TEST_IN_PIDNS=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestExecSourceInPIDNamespace") {
		t.Errorf("in a new PID namespace: %v\n%s", err, out)
	}
}
