package taskiter

import (
	"errors"
	"os"
	"os/exec"
	"testing"

	"github.com/cilium/ebpf"
)

// TestCollectRemovesEndedGroups: the bpf-iter pass keeps a map entry per thread group; within collectEvery
// passes of a process's end, its entry is gone, and a live one's stays.
func TestCollectRemovesEndedGroups(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("loading a BPF program needs root")
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
	ended := exec.Command("sleep", "3600")
	if err := ended.Start(); err != nil {
		t.Fatal(err)
	}
	pass()
	val := make([]byte, stateSize)
	for _, pid := range []int{ended.Process.Pid, os.Getpid()} {
		if err := it.groups.Lookup(uint32(pid), &val); err != nil {
			t.Fatalf("process %d has no entry after a pass: %v", pid, err)
		}
	}
	_ = ended.Process.Kill()
	_ = ended.Wait()
	for range collectEvery {
		pass()
	}
	if err := it.groups.Lookup(uint32(ended.Process.Pid), &val); !errors.Is(err, ebpf.ErrKeyNotExist) {
		t.Errorf("process %d ended %d passes ago: its entry is still there (%v)", ended.Process.Pid, collectEvery, err)
	}
	if err := it.groups.Lookup(uint32(os.Getpid()), &val); err != nil {
		t.Errorf("this live process %d lost its entry: %v", os.Getpid(), err)
	}
}
