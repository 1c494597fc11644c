package taskiter

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"testing"

	"github.com/cilium/ebpf"
)

// TestSlotsAndCollect: the bpf-iter pass keeps a group's state in its slot of slots (tgid % nslots), and
// in its groups map when another live group holds that slot: a process started at the PID one slot-array
// length above a live one (chosen through ns_last_pid) goes to groups, and within collectEvery passes of
// its end its entry there is gone while the live one keeps its slot; the slot of a process that ended is
// taken over by the next process that needs it, here one started at the PID one slot-array length above.
func TestSlotsAndCollect(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("loading a BPF program and choosing PIDs need root")
	}
	it, err := OpenPass(PassBPFIter)
	if errors.Is(err, ErrNotSupported) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = it.Close() }()
	pass := func() {
		t.Helper()
		if _, err := it.Changed(nil); err != nil && !errors.Is(err, ErrIncomplete) {
			t.Fatal(err)
		}
	}
	where := func(pid int) string {
		t.Helper()
		val := make([]byte, stateSize)
		if err := it.slots.Lookup(uint32(pid%nslots), &val); err != nil {
			t.Fatal(err)
		}
		if int(binary.NativeEndian.Uint32(val[stateTGID:])) == pid {
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
	pidMax := readPIDMax(t)
	// A live process whose PID has room for another one slot-array length above it.
	var first *exec.Cmd
	for range 50 {
		c := sleeper(t)
		if c.Process.Pid+nslots < pidMax {
			first = c
			break
		}
	}
	if first == nil {
		t.Skipf("no PID below pid_max %d less %d came up", pidMax, nslots)
	}
	twin, err := startAt(first.Process.Pid + nslots)
	if err != nil {
		t.Skipf("could not start a process at PID %d: %v", first.Process.Pid+nslots, err)
	}
	pass()
	if w1, w2 := where(first.Process.Pid), where(twin.Process.Pid); w1 != "slot" || w2 != "groups" {
		t.Fatalf("after a pass: process %d's state in %s, want its slot; process %d's (the same slot) in %s, want groups",
			first.Process.Pid, w1, twin.Process.Pid, w2)
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

func sleeper(t *testing.T) *exec.Cmd {
	t.Helper()
	c := exec.Command("sleep", "3600")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stop(c) })
	return c
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
