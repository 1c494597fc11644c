package cli

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tare-dev/tare/internal/summary"
	"github.com/tare-dev/tare/internal/testenv"
)

// TestMeasureBlockIO: while tare measures, dd reads a 32 MiB file with direct I/O in 4 KiB blocks, 8,192
// reads the test knows of; tare's block I/O holds at least those reads and bytes, charged to dd's group,
// and no more reads on the whole node than /proc/diskstats counted over a span that holds the window.
func TestMeasureBlockIO(t *testing.T) {
	requireTiming(t)
	testenv.NeedRoot(t, "tracing block I/O loads BPF programs")
	dd, err := exec.LookPath("dd")
	if err != nil {
		testenv.Unavailable(t, "dd: %v", err)
	}
	dir, err := os.MkdirTemp("/var/tmp", "tare-blockio-") // on the disk, where /tmp may be in memory
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	file := filepath.Join(dir, "data")
	const size, block = 32 << 20, 4096
	if out, err := exec.Command(dd, "if=/dev/zero", "of="+file, "bs=1M", "count=32", "oflag=direct").CombinedOutput(); err != nil {
		t.Fatalf("writing the file: %v\n%s", err, out)
	}
	before := diskstatsReads(t, file)
	type result struct {
		out, errOut string
		err         error
	}
	done := make(chan result, 1)
	// The window is ended (as Ctrl-C ends it) a second after dd ends: a fixed duration cut dd's last reads
	// off on a loaded machine (CI: 62 of 8,192), where the tracer attached late and dd ran slowly.
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	go func() {
		out, errOut, err := run(ctx, "measure", "--duration", "2m", "--block-io", "-o", "json")
		done <- result{out, errOut, err}
	}()
	// The block I/O window opens at the first sample, just after the tracer attaches: on a loaded machine
	// that was more than a fixed 1.5 s after the start, and the window missed dd's first reads.
	waitTracing(t, 4, 30*time.Second)
	time.Sleep(3 * time.Second)
	if out, err := exec.Command(dd, "if="+file, "of=/dev/null", "bs="+strconv.Itoa(block), "iflag=direct").CombinedOutput(); err != nil {
		stop()
		<-done
		t.Fatalf("reading the file: %v\n%s", err, out)
	}
	time.Sleep(time.Second)
	stop()
	r := <-done
	after := diskstatsReads(t, file)
	if r.err != nil {
		t.Fatalf("measure: %v\n%s", r.err, r.errOut)
	}
	var s summary.Summary
	if err := json.Unmarshal([]byte(r.out), &s); err != nil {
		t.Fatal(err)
	}
	if s.BlockIO == nil {
		t.Fatalf("no block I/O in the summary; stderr:\n%s", r.errOut)
	}
	// dd is the test binary's child, and the test binary is tare here: dd's group is the busiest reader.
	var ddReads, ddBytes uint64
	var ddGroup string
	for _, g := range s.BlockIO.Groups {
		if g.ReadRequests > ddReads {
			ddReads, ddBytes, ddGroup = g.ReadRequests, g.ReadBytes, g.Name
		}
	}
	disk := after - before
	t.Logf("dd's group %q: %d reads, %d bytes (dd: %d, %d); node %d reads, /proc/diskstats %d; device p50 %v",
		ddGroup, ddReads, ddBytes, size/block, size, s.BlockIO.Total.ReadRequests, disk, s.BlockIO.Total.DeviceP50)
	// The block tracepoints can miss a few requests that /proc/diskstats counts (blockio's test; CI saw 6 of
	// 8,192 missed with the whole read inside the window): at least 99.5% of dd's.
	if float64(ddReads) < 0.995*size/block || float64(ddBytes) < 0.995*size {
		t.Errorf("dd's group read %d requests, %d bytes: want at least 99.5%% of dd's %d and %d", ddReads, ddBytes, size/block, size)
	}
	// The tracepoints can fire for a little less than diskstats counts, never more (blockio's test).
	if s.BlockIO.Total.ReadRequests > disk+8 {
		t.Errorf("tare counted %d reads on the node, /proc/diskstats %d over a longer span", s.BlockIO.Total.ReadRequests, disk)
	}
	if p := s.BlockIO.Total.DeviceP50; p == nil || p.Hi <= 0 {
		t.Errorf("node device p50 %+v", p)
	}
}

// waitTracing waits until this process (tare, in these tests) holds n BPF links on block tracepoints: the block I/O
// tracer's programs, attached.
func waitTracing(t *testing.T, n int, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		fds, _ := os.ReadDir("/proc/self/fdinfo")
		got := 0
		for _, fd := range fds {
			if b, err := os.ReadFile(filepath.Join("/proc/self/fdinfo", fd.Name())); err == nil && strings.Contains(string(b), "tp_name:\tblock_") {
				got++
			}
		}
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s, tare holds %d BPF links on block tracepoints, want %d (the block I/O tracer's)", limit, got, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// diskstatsReads is the reads completed of the block device that holds path (a disk or a partition: each
// has its line), from /proc/diskstats.
func diskstatsReads(t *testing.T, path string) uint64 {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	major, minor := strconv.FormatUint(uint64(unix.Major(st.Dev)), 10), strconv.FormatUint(uint64(unix.Minor(st.Dev)), 10)
	b, err := os.ReadFile("/proc/diskstats")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 4 && f[0] == major && f[1] == minor {
			n, _ := strconv.ParseUint(f[3], 10, 64)
			return n
		}
	}
	testenv.Unavailable(t, "%s is on %s:%s, which has no /proc/diskstats line (not a block device)", path, major, minor)
	return 0
}
