package kernel

import (
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/tare-dev/tare/internal/testload"
)

// smapsKB reads the process's Rss and Pss from /proc/PID/smaps_rollup with the test's own parser (the ground
// truth the estimate is held to), in bytes.
func smapsKB(t *testing.T, pid int) (rss, pss uint64) {
	t.Helper()
	m := testload.SmapsRollup(t, pid)
	return m["Rss"], m["Pss"]
}

// TestReadMemoryFollowsStatm: a real process grows its private memory. A small step (within smapsDrift of
// the resident size smaps_rollup was last read at) is followed from statm without reading smaps_rollup
// again, and the estimate stays as close to what smaps_rollup says as the drift allows; a large step reads
// smaps_rollup again; refresh always does.
func TestReadMemoryFollowsStatm(t *testing.T) {
	t.Parallel()
	p := testload.Launch(t, "grow")
	pid := p.Pid()
	step := func(kib int) {
		p.Send(t, strconv.Itoa(kib))
		if got := p.Line(t, 10*time.Second); got != "ok" {
			t.Fatalf("grow helper said %q", got)
		}
	}
	step(4096) // settle the Go runtime's own start-up growth before the first reading
	var first Detail
	ReadMemory("/proc", pid, "grow", nil, false, &first)
	if first.SmapsErr != nil || first.Estimated() || first.SmapsStatm == 0 || first.PSS == 0 {
		t.Fatalf("first reading %+v", first)
	}
	page := uint64(os.Getpagesize())
	small := int(smapsDrift(first.SmapsStatm) * page / 2 >> 10) // half the drift allowed, in KiB
	step(small)
	var second Detail
	ReadMemory("/proc", pid, "grow", &first, false, &second)
	rss, pss := smapsKB(t, pid)
	if !second.Estimated() || second.SmapsStatm != first.SmapsStatm {
		t.Errorf("after %d KiB: smaps_rollup read again (%+v), want the estimate", small, second)
	}
	// The estimate follows statm's change; it may differ from smaps_rollup by what moved besides the step,
	// which is bounded by the drift.
	tol := smapsDrift(first.SmapsStatm) * page
	if diff := absDiff(second.PSS, pss); diff > tol {
		t.Errorf("estimated PSS %d vs smaps_rollup %d: %d apart, more than the %d the drift allows", second.PSS, pss, diff, tol)
	}
	if diff := absDiff(second.RSS, rss); diff > tol {
		t.Errorf("estimated RSS %d vs smaps_rollup %d: %d apart, more than %d", second.RSS, rss, diff, tol)
	}
	if grew := second.PSS - first.PSS; grew < uint64(small)<<10*9/10 {
		t.Errorf("estimated PSS grew by %d bytes, want about the %d KiB step", grew, small)
	}

	big := int(smapsDrift(first.SmapsStatm)*page*4) >> 10
	step(big)
	var third Detail
	ReadMemory("/proc", pid, "grow", &second, false, &third)
	rss, pss = smapsKB(t, pid)
	if third.Estimated() || third.SmapsStatm == first.SmapsStatm {
		t.Errorf("after %d KiB more: not read again (%+v)", big, third)
	}
	if absDiff(third.PSS, pss) > 64*page || absDiff(third.RSS, rss) > 64*page {
		t.Errorf("read again: PSS %d RSS %d, smaps_rollup says %d and %d", third.PSS, third.RSS, pss, rss)
	}

	var fourth Detail
	ReadMemory("/proc", pid, "grow", &third, true, &fourth)
	if fourth.Estimated() || fourth.SmapsErr != nil {
		t.Errorf("refresh did not read smaps_rollup: %+v", fourth)
	}
}

func TestAddClamped(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		v    uint64
		by   int64
		want uint64
	}{{10, 5, 15}, {10, -5, 5}, {10, -10, 0}, {10, -11, 0}, {0, -1, 0}, {0, 0, 0}} {
		if got := addClamped(c.v, c.by); got != c.want {
			t.Errorf("addClamped(%d, %d) = %d, want %d", c.v, c.by, got, c.want)
		}
	}
}
