package kernel

import (
	"bytes"
	"math"
	"strconv"
	"strings"
	"testing"
)

// Fuzz targets of the parsers of what tare reads once per process or at the detail cadence: cmdline,
// statm and smaps_rollup, seeded with files captured from a real machine.

func FuzzSplitCmdline(f *testing.F) {
	seedFiles(f, "root/proc/*/cmdline")
	f.Fuzz(func(t *testing.T, b []byte) {
		args := splitCmdline(b)
		if got, want := strings.Join(args, "\x00"), string(bytes.TrimRight(b, "\x00")); got != want {
			t.Fatalf("splitCmdline(%q) = %q: joined, %q; want %q", b, args, got, want)
		}
	})
}

func FuzzParseStatm(f *testing.F) {
	seedFiles(f, "seeds/statm_*")
	f.Fuzz(func(t *testing.T, b []byte) {
		v, sh := parseStatm(b)
		if v != 0 && len(bytes.Fields(b)) < 2 {
			t.Fatalf("%d resident pages from fewer than two fields", v)
		}
		if sh != 0 && len(bytes.Fields(b)) < 3 {
			t.Fatalf("%d shared pages from fewer than three fields", sh)
		}
	})
}

func FuzzParseSmapsRollup(f *testing.F) {
	seedFiles(f, "root/proc/*/smaps_rollup")
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := parseSmapsRollup(b)
		if err != nil {
			return
		}
		// With one Rss line, rss is its kB in bytes: a figure too large for that must be an error, not wrap.
		var rss []string
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "Rss:"); ok {
				rss = append(rss, v)
			}
		}
		if len(rss) != 1 {
			return
		}
		kb, err := strconv.ParseUint(strings.Fields(rss[0])[0], 10, 64)
		if err != nil || kb > math.MaxUint64>>10 || m.rss != kb<<10 {
			t.Fatalf("Rss %q gave %d bytes (the kB figure overflowed 64 bits)", rss[0], m.rss)
		}
	})
}
