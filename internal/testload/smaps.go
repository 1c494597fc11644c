package testload

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
)

// SmapsRollup reads a process's /proc/PID/smaps_rollup with a parser of the test's own (ground truth that
// tare's reader is held to): each "Field:" line's value, in bytes. A process gone or unreadable fails the
// test.
func SmapsRollup(t testing.TB, pid int) map[string]uint64 {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]uint64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 || !strings.HasSuffix(fields[0], ":") {
			continue
		}
		if v, err := strconv.ParseUint(fields[1], 10, 64); err == nil {
			out[strings.TrimSuffix(fields[0], ":")] = v << 10
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("reading /proc/%d/smaps_rollup: %v", pid, err)
	}
	return out
}
