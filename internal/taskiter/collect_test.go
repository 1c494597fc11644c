package taskiter

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/cilium/ebpf"
)

// TestSlotsAndCollect: each BPF pass keeps a group's state in its slot of slots (tgid % nslots), and in
// its groups map when another live group holds that slot: a process started at the PID one slot-array
// length above a live one (chosen through ns_last_pid) goes to groups, and within collectEvery passes of
// its end its entry there is gone while the live one keeps its slot; the slot of a process that ended is
// taken over by the next process that needs it, here one started at the PID one slot-array length above.
// Both processes are reported by the first pass after their start and not by the next (their state works
// wherever it is).
func TestSlotsAndCollect(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("loading a BPF program and choosing PIDs need root")
	}
	for _, p := range []Pass{PassOpenCoded, PassBPFIter} {
		t.Run(string(p), func(t *testing.T) { testSlotsAndCollect(t, p) })
	}
}

func testSlotsAndCollect(t *testing.T, p Pass) {
	it, err := OpenPass(p)
	if errors.Is(err, ErrNotSupported) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = it.Close() }()
	pass := func() []Group {
		t.Helper()
		gs, err := it.Changed(nil)
		if err != nil && !errors.Is(err, ErrIncomplete) {
			t.Fatal(err)
		}
		return gs
	}
	reported := func(gs []Group, pid int) bool {
		for _, g := range gs {
			if g.TGID == pid {
				return true
			}
		}
		return false
	}
	where := func(pid int) string {
		t.Helper()
		val := make([]byte, it.layout.size)
		if err := it.slots.Lookup(uint32(pid%nslots), &val); err != nil {
			t.Fatal(err)
		}
		if int(binary.NativeEndian.Uint32(val[it.layout.tgid:])) == pid {
			return "slot"
		}
		switch err := it.groups.Lookup(uint32(pid), &val); {
		case err == nil:
			return "groups"
		case errors.Is(err, ebpf.ErrKeyNotExist):
			return "none"
		default:
			t.Fatal(err)
			return ""
		}
	}
	// A live process whose PID has room for another one slot-array length above it, both chosen.
	pidMax := readPIDMax(t)
	if pidMax <= nslots+1000 {
		t.Skipf("pid_max %d leaves no room for two PIDs %d apart", pidMax, nslots)
	}
	base := freePair(1000, pidMax-nslots)
	if base == 0 {
		t.Skip("no free pair of PIDs one slot-array length apart")
	}
	first, err := startAt(base)
	if err != nil {
		t.Skipf("could not start a process at PID %d: %v", base, err)
	}
	t.Cleanup(func() { stop(first) })
	twin, err := startAt(first.Process.Pid + nslots)
	if err != nil {
		t.Skipf("could not start a process at PID %d: %v", first.Process.Pid+nslots, err)
	}
	waitAsleep(t, first.Process.Pid)
	waitAsleep(t, twin.Process.Pid)
	gs := pass()
	if w1, w2 := where(first.Process.Pid), where(twin.Process.Pid); w1 != "slot" || w2 != "groups" {
		t.Fatalf("after a pass: process %d's state in %s, want its slot; process %d's (the same slot) in %s, want groups",
			first.Process.Pid, w1, twin.Process.Pid, w2)
	}
	if !reported(gs, twin.Process.Pid) {
		t.Errorf("process %d, started before the pass, was not reported by it", twin.Process.Pid)
	}
	for _, pid := range []int{first.Process.Pid, twin.Process.Pid} {
		if reported(pass(), pid) {
			t.Errorf("process %d, asleep, was reported again by the next pass", pid)
		}
	}
	stop(twin)
	for range collectEvery {
		pass()
	}
	if w := where(twin.Process.Pid); w != "none" {
		t.Errorf("process %d ended %d passes ago: its state is still in %s", twin.Process.Pid, collectEvery, w)
	}
	if w := where(first.Process.Pid); w != "slot" {
		t.Errorf("the live process %d's state moved to %s", first.Process.Pid, w)
	}
	// The first process ends; two passes later its slot holds no live group, and the next process that
	// needs it takes it.
	stop(first)
	pass()
	pass()
	heir, err := startAt(first.Process.Pid + nslots)
	if err != nil {
		t.Skipf("could not start a process at PID %d: %v", first.Process.Pid+nslots, err)
	}
	defer stop(heir)
	pass()
	if w := where(heir.Process.Pid); w != "slot" {
		t.Errorf("process %d, whose slot's group ended: its state is in %s, want the slot", heir.Process.Pid, w)
	}
}

// waitAsleep waits until process pid sleeps (state S: sleep(1) in nanosleep, past its start-up), so that
// it does not run between two passes.
func waitAsleep(t *testing.T, pid int) {
	t.Helper()
	for range 200 {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			t.Fatal(err)
		}
		if i := bytes.LastIndexByte(b, ')'); i > 0 && i+2 < len(b) && b[i+2] == 'S' {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("process %d did not fall asleep within 2 s", pid)
}

// freePair returns a PID in [lo, hi) such that neither it nor the PID nslots above it is taken, 0 when none
// is found.
func freePair(lo, hi int) int {
	taken := func(pid int) bool { _, err := os.Stat("/proc/" + strconv.Itoa(pid)); return err == nil }
	for pid := lo; pid < hi; pid += 97 {
		if !taken(pid) && !taken(pid+nslots) {
			return pid
		}
	}
	return 0
}

func stop(c *exec.Cmd) {
	if c.ProcessState == nil {
		_ = c.Process.Kill()
		_ = c.Wait()
	}
}

// startAt starts "sleep 3600" at PID pid through /proc/sys/kernel/ns_last_pid, trying a few times (another
// process may take the PID first).
func startAt(pid int) (*exec.Cmd, error) {
	for range 20 {
		if err := os.WriteFile("/proc/sys/kernel/ns_last_pid", []byte(strconv.Itoa(pid-1)), 0o644); err != nil {
			return nil, err
		}
		c := exec.Command("sleep", "3600")
		if err := c.Start(); err != nil {
			return nil, err
		}
		if c.Process.Pid == pid {
			return c, nil
		}
		stop(c)
	}
	return nil, fmt.Errorf("PID %d was taken by others 20 times", pid)
}

func readPIDMax(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/sys/kernel/pid_max")
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(string(b[:len(b)-1]))
	if err != nil {
		t.Fatal(err)
	}
	return n
}
