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
	cmd := Command("burn", strconv.Itoa(mc))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting a %dm burner: %v", mc, err)
	}
	t.Cleanup(func() {
		_ = stdin.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	ready := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		ready <- strings.TrimSpace(line)
	}()
	select {
	case line := <-ready:
		if line != "ready" {
			t.Fatalf("the %dm burner printed %q, want ready", mc, line)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("the %dm burner did not start within 10s", mc)
	}
	return cmd.Process.Pid
}
