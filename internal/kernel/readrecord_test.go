package kernel

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestReadRecordWhole: a one-record read (a short read taken as the end) returns what reading to the end
// returns, for every file read that way, on real processes, including a command line longer than the first
// buffer; and a multi-record file (maps, longer than one buffer) is still read whole by ReadBounded.
func TestReadRecordWhole(t *testing.T) {
	long := strings.Repeat("x", 20000)
	cmd := exec.Command("sh", "-c", "sleep 30", "tare-test", long)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	pids := []int{cmd.Process.Pid, 1} // not this process: its own reads move its io and stat
	deadline := time.Now().Add(5 * time.Second)
	for _, pid := range pids {
		dir := "/proc/" + strconv.Itoa(pid) + "/"
		for _, name := range []string{"stat", "statm", "io", "cgroup"} {
			compareReads(t, dir+name, func(p string) ([]byte, error) { return readRecord(p) }, deadline)
		}
		for _, name := range []string{"cmdline", "smaps_rollup"} {
			compareReads(t, dir+name, func(p string) ([]byte, error) { return readBlocking(p, oneRecordFiles[name]) }, deadline)
		}
	}
	if b, err := readBlocking("/proc/"+strconv.Itoa(cmd.Process.Pid)+"/cmdline", true); err != nil || !strings.Contains(string(b), long) {
		t.Errorf("the long command line read in one record: %d bytes, %v", len(b), err)
	}
	maps, err := ReadBounded("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	if len(maps) <= 4096 {
		t.Skipf("maps is %d bytes: not longer than one buffer", len(maps))
	}
	if got, err := readBlocking("/proc/self/maps", oneRecordFiles["maps"]); err != nil || strings.Count(string(got), "\n") < strings.Count(string(maps), "\n")-5 {
		t.Errorf("maps through the blocking reader: %d lines, ReadBounded %d (%v)", strings.Count(string(got), "\n"), strings.Count(string(maps), "\n"), err)
	}
}

// compareReads reads path both ways until they agree (the files move: stat's times, smaps_rollup's sizes),
// failing at the deadline.
func compareReads(t *testing.T, path string, read func(string) ([]byte, error), deadline time.Time) {
	t.Helper()
	for {
		a, errA := read(path)
		b, errB := ReadBounded(path)
		if errA != nil || errB != nil {
			if os.IsPermission(errA) || os.IsPermission(errB) {
				return
			}
			t.Fatalf("%s: %v / %v", path, errA, errB)
		}
		if string(a) == string(b) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: one-record read %q, read to the end %q", path, a, b)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
