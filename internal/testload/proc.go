package testload

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Proc is a running helper of the test binary (a mode of Main): the lines it prints are read on demand,
// and it is stopped when the test ends.
type Proc struct {
	cmd   *exec.Cmd
	mode  string
	stdin io.WriteCloser
	out   *bufio.Reader
	once  sync.Once
}

// Launch starts the helper mode with args and stops it when the test ends.
func Launch(t testing.TB, mode string, args ...string) *Proc {
	t.Helper()
	cmd := Command(mode, args...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the %s helper: %v", mode, err)
	}
	p := &Proc{cmd: cmd, mode: mode, stdin: stdin, out: bufio.NewReader(stdout)}
	t.Cleanup(p.Stop)
	return p
}

// Pid is the helper's process ID.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Line reads the next line the helper prints, without its newline. The test fails when nothing comes
// within timeout, or the helper ends before printing one.
func (p *Proc) Line(t testing.TB, timeout time.Duration) string {
	t.Helper()
	type read struct {
		line string
		err  error
	}
	ch := make(chan read, 1)
	go func() {
		s, err := p.out.ReadString('\n')
		ch <- read{strings.TrimSpace(s), err}
	}()
	select {
	case r := <-ch:
		if r.err != nil && r.line == "" {
			t.Fatalf("the %s helper (pid %d) ended before printing a line: %v", p.mode, p.Pid(), r.err)
		}
		return r.line
	case <-time.After(timeout):
		t.Fatalf("the %s helper (pid %d) printed nothing within %s", p.mode, p.Pid(), timeout)
		return ""
	}
}

// Send writes a line to the helper's stdin (the nest mode waits for one).
func (p *Proc) Send(t testing.TB, line string) {
	t.Helper()
	if _, err := io.WriteString(p.stdin, line+"\n"); err != nil {
		t.Fatalf("writing to the %s helper (pid %d): %v", p.mode, p.Pid(), err)
	}
}

// Stop closes the helper's stdin, which every mode takes as the sign to end, and waits for it: 5 s at
// most, then it is killed. Stopping twice is stopping once.
func (p *Proc) Stop() {
	p.once.Do(func() {
		_ = p.stdin.Close()
		done := make(chan struct{})
		go func() { _ = p.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = p.cmd.Process.Kill()
			<-done
		}
	})
}

// Sleepers starts n idle processes (sleep 3600), as a busy node's many idle processes, and ends them when
// the test ends. It returns their PIDs.
func Sleepers(t testing.TB, n int) []int {
	t.Helper()
	cmds := make([]*exec.Cmd, 0, n)
	t.Cleanup(func() {
		for _, c := range cmds {
			_ = c.Process.Kill()
		}
		for _, c := range cmds {
			_ = c.Wait()
		}
	})
	pids := make([]int, 0, n)
	for range n {
		c := exec.Command("sleep", "3600")
		if err := c.Start(); err != nil {
			t.Fatalf("starting sleeper %d of %d: %v", len(cmds)+1, n, err)
		}
		cmds = append(cmds, c)
		pids = append(pids, c.Process.Pid)
	}
	return pids
}

// PerfFDs counts this process's open perf event descriptors: tests of tare profile check that none is
// left after a run, Ctrl-C included.
func PerfFDs(t testing.TB) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		if l, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name())); err == nil && strings.Contains(l, "perf_event") {
			n++
		}
	}
	return n
}

// WaitSleeping waits until every process of pids sleeps (state S in /proc/PID/stat): a sleeper still
// starting runs. It fails the test after 30 s.
func WaitSleeping(t testing.TB, pids []int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for _, pid := range pids {
		for {
			b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
			if err != nil {
				t.Fatal(err)
			}
			if _, rest, ok := strings.Cut(string(b), ") "); ok && strings.HasPrefix(rest, "S") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("sleeper %d not asleep after 30s", pid)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}
