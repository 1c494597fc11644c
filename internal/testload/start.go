package testload

import (
	"bufio"
	"strconv"
	"strings"
	"testing"
	"time"
)

// StartBurner starts a burner of mc millicores (the burn mode), waits until it reports ready, and stops it
// when the test ends. It returns the burner's PID.
func StartBurner(t testing.TB, mc int) int {
	t.Helper()
	pid, line := Start(t, "burn", strconv.Itoa(mc))
	if line != "ready" {
		t.Fatalf("the %dm burner printed %q, want ready", mc, line)
	}
	return pid
}

// Start starts the helper mode with args, waits (10 s at most) for the first line it prints, and stops it
// when the test ends. It returns the helper's PID and that line.
func Start(t testing.TB, mode string, args ...string) (pid int, firstLine string) {
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
	t.Cleanup(func() {
		_ = stdin.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	type first struct {
		line string
		err  error
	}
	ready := make(chan first, 1)
	go func() {
		line, err := bufio.NewReader(stdout).ReadString('\n')
		ready <- first{strings.TrimSpace(line), err}
	}()
	select {
	case f := <-ready:
		if f.err != nil && f.line == "" {
			t.Fatalf("the %s helper ended before printing a line: %v", mode, f.err)
		}
		return cmd.Process.Pid, f.line
	case <-time.After(10 * time.Second):
		t.Fatalf("the %s helper printed nothing within 10s", mode)
		return 0, ""
	}
}
