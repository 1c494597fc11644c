package testload

import (
	"strconv"
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
	p := Launch(t, mode, args...)
	return p.Pid(), p.Line(t, 10*time.Second)
}
