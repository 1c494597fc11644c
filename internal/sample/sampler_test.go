package sample

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/tare-dev/tare/internal/testenv"
)

func TestSamplerFixtureUnprivileged(t *testing.T) {
	t.Parallel()
	s, err := New(context.Background(), Options{ProcRoot: fixtureProc, SysRoot: fixtureSys, Interval: time.Second,
		Detail: time.Second, Unprivileged: true, SelfPID: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	first, err := s.Sample()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range first.New {
		seen[p.Key.PID] = true
	}
	for _, pid := range []int{1, 2, 1405, 10101} {
		if !seen[pid] {
			t.Errorf("pid %d missing from the first sample", pid)
		}
	}
	if seen[4242] {
		t.Error("the corrupt pid 4242 was not skipped")
	}
	second, err := s.Sample()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range second.Procs {
		if p.CPUNs != 0 {
			t.Errorf("static fixture produced CPU %d for id %d", p.CPUNs, p.ID)
		}
	}
	if s.Meta().CPUSource != "schedstat" {
		t.Errorf("cpu source %q, want schedstat", s.Meta().CPUSource)
	}
}

// TestSamplerExitAndPIDReuse: a process that exits mid-window is settled once, and a new process that gets
// its PID is a new process, not a continuation.
func TestSamplerExitAndPIDReuse(t *testing.T) {
	for _, unpriv := range []bool{false, true} {
		t.Run("unprivileged="+strconv.FormatBool(unpriv), func(t *testing.T) {
			if !unpriv {
				testenv.NeedRoot(t, "taskstats needs CAP_NET_ADMIN")
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			s, err := New(ctx, Options{Interval: 100 * time.Millisecond, Detail: time.Second, Unprivileged: unpriv}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			a := exec.Command("sleep", "30")
			if err := a.Start(); err != nil {
				t.Fatal(err)
			}
			pid := a.Process.Pid
			if _, err := s.Sample(); err != nil {
				t.Fatal(err)
			}
			_ = a.Process.Kill()
			_ = a.Wait()
			b, reused := startWithPID(pid)
			if b != nil {
				defer func() { _ = b.Process.Kill(); _ = b.Wait() }()
			}
			var exited, reborn bool
			deadline := time.Now().Add(3 * time.Second)
			done := func() bool { return exited && (reborn || !reused) }
			for time.Now().Before(deadline) && !done() {
				smp, err := s.Sample()
				if err != nil {
					t.Fatal(err)
				}
				for _, id := range smp.Exited {
					if id == 0 {
						t.Error("exit of id 0")
					}
					exited = true
				}
				for _, p := range smp.New {
					if p.Key.PID == pid && p.Cmdline == "sleep 31" {
						reborn = true
					}
				}
				time.Sleep(50 * time.Millisecond)
			}
			if !exited {
				t.Error("the killed process was never settled as exited")
			}
			if reused && !reborn {
				t.Error("the process that reused the PID was not seen as new")
			}
			if !reused {
				t.Log("could not force PID reuse through ns_last_pid; checked the exit only")
			}
		})
	}
}

// startWithPID tries to start "sleep 31" with the given PID through /proc/sys/kernel/ns_last_pid.
func startWithPID(pid int) (*exec.Cmd, bool) {
	for range 20 {
		c, err := startAtPID(pid, func(got int) bool { return got == pid }, "sleep", "31")
		if err != nil {
			return nil, false
		}
		if c != nil {
			return c, true
		}
	}
	return nil, false
}

var errNoPIDChoice = errors.New("cannot choose the next PID")

// startAtPID starts name with args as the next PID after pid-1 (written to /proc/sys/kernel/ns_last_pid)
// and keeps it when ok accepts the PID it got: another process may take that PID first, then the command
// is killed and reaped and startAtPID returns nil. An error: the next PID cannot be chosen or the
// command cannot start.
func startAtPID(pid int, ok func(int) bool, name string, args ...string) (*exec.Cmd, error) {
	if err := os.WriteFile("/proc/sys/kernel/ns_last_pid", []byte(strconv.Itoa(pid-1)), 0o644); err != nil {
		return nil, fmt.Errorf("%w: %w", errNoPIDChoice, err)
	}
	c := exec.Command(name, args...)
	if err := c.Start(); err != nil {
		return nil, err
	}
	if ok(c.Process.Pid) {
		return c, nil
	}
	_ = c.Process.Kill()
	_ = c.Wait()
	return nil, nil
}

func TestCoalesce(t *testing.T) {
	t.Parallel()
	in := []ProcSample{{ID: 1, CPUNs: 5}, {ID: 2, CPUNs: 1}, {ID: 1, CPUNs: 7, HasDetail: true, RSS: 9}}
	got := coalesce(in)
	want := []ProcSample{{ID: 1, CPUNs: 12, HasDetail: true, RSS: 9}, {ID: 2, CPUNs: 1}}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("coalesce = %+v, want %+v", got, want)
	}
}

// TestSamplerCloseReleasesEverything: after Close no file, socket or goroutine of the sampler is left (tests
// and long-running agents create many samplers).
func TestSamplerCloseReleasesEverything(t *testing.T) {
	countFDs := func() int {
		ents, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Fatal(err)
		}
		return len(ents)
	}
	before := countFDs()
	for range 3 {
		s, err := New(context.Background(), Options{Interval: 100 * time.Millisecond, Detail: time.Second}, nil)
		if err != nil {
			t.Fatal(err)
		}
		for range 3 {
			if _, err := s.Sample(); err != nil {
				t.Fatal(err)
			}
		}
		s.Close()
	}
	if after := countFDs(); after > before {
		t.Errorf("%d file descriptors before, %d after three samplers were closed", before, after)
	}
}
