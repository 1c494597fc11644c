package sample

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tare-dev/tare/internal/testload"
)

// TestDetailSampleSkipsIdleProcesses: with the task iterator, a detail sample reads only the processes that
// ran, plus the memory of the idle ones whose turn it is, yet still reports every process's memory. The
// count of read system calls comes from the kernel (/proc/self/io syscr), not from the sampler.
func TestDetailSampleSkipsIdleProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 1,500 processes")
	}
	testload.Sleepers(t, 1500)
	s := newFilteredSampler(t, Options{Interval: time.Second, Detail: time.Second}) // every sample is a detail one
	base, err := s.Sample()
	if err != nil {
		t.Fatal(err)
	}
	withMemory := 0
	for _, p := range base.Procs {
		if p.HasDetail && p.RSS > 0 {
			withMemory++
		}
	}
	for i := range 6 {
		before := readSyscalls(t)
		smp, err := s.Sample()
		if err != nil {
			t.Fatal(err)
		}
		reads := readSyscalls(t) - before
		rows := 0
		for _, p := range smp.Procs {
			if p.HasDetail && p.RSS > 0 {
				rows++
			}
		}
		t.Logf("detail sample %d: %d read system calls for %d processes, %d with memory (baseline %d)", i+1, reads, len(s.procs), rows, withMemory)
		// Reading every process would take at least one read each; the idle ones' memory turns are one in six.
		if reads > len(s.procs)/2 {
			t.Errorf("detail sample %d made %d read system calls for %d processes: want at most half as many", i+1, reads, len(s.procs))
		}
		// Processes end and start on this machine meanwhile; the 1,500 sleepers alone stay.
		if rows < withMemory*9/10 {
			t.Errorf("detail sample %d reports the memory of %d processes; the baseline had %d", i+1, rows, withMemory)
		}
	}
}

// readSyscalls returns this process's read system calls so far (syscr in /proc/self/io).
func readSyscalls(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "syscr: "); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no syscr in /proc/self/io")
	return 0
}
