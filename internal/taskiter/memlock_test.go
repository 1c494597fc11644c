package taskiter

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/tare-dev/tare/internal/testenv"
)

// TestBPFIterSmallMemlock: with RLIMIT_MEMLOCK at 64 KiB (the soft limit lowered, the hard one kept, as
// prlimit --memlock=65536: would set it) the bpf-iter pass still loads and runs. On this test's kernel
// (Linux 5.11 or later: BPF memory charged to the memory cgroup) it loads within the limit and tare
// leaves the limit as it was; before 5.11 it loads because raiseMemlock lifted the limit first, which
// needs CAP_SYS_RESOURCE. Only the first can be checked on a kernel of 5.11 or later.
func TestBPFIterSmallMemlock(t *testing.T) {
	testenv.NeedRoot(t, "loading a BPF program needs CAP_BPF and CAP_PERFMON")
	var orig unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_MEMLOCK, &orig); err != nil {
		t.Fatal(err)
	}
	small := unix.Rlimit{Cur: 64 << 10, Max: orig.Max}
	if orig.Max < small.Cur {
		small.Cur = orig.Max
	}
	if err := unix.Setrlimit(unix.RLIMIT_MEMLOCK, &small); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := unix.Setrlimit(unix.RLIMIT_MEMLOCK, &orig); err != nil {
			t.Errorf("restoring RLIMIT_MEMLOCK: %v", err)
		}
	})
	it, err := OpenPass(PassBPFIter)
	if errors.Is(err, ErrNotSupported) {
		testenv.Unavailable(t, "%v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = it.Close() }()
	gs, err := it.All(nil)
	if err != nil && !errors.Is(err, ErrIncomplete) {
		t.Fatal(err)
	}
	var after unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_MEMLOCK, &after); err != nil {
		t.Fatal(err)
	}
	t.Logf("bpf-iter loaded with RLIMIT_MEMLOCK soft %d KiB; %d thread groups in one pass; limit after: %s", small.Cur>>10, len(gs), memlockNow())
	if after != small && after.Cur != unix.RLIM_INFINITY {
		t.Errorf("RLIMIT_MEMLOCK %+v after loading, want it unchanged (%+v) or lifted", after, small)
	}
}

// TestMemlockError: a load refused with EPERM after the limit could not be raised names RLIMIT_MEMLOCK and
// what to do; otherwise EPERM means privileges, as before.
func TestMemlockError(t *testing.T) {
	t.Parallel()
	load := fmt.Errorf("map create: %w", unix.EPERM)
	raise := fmt.Errorf("raising RLIMIT_MEMLOCK (soft 64 KiB, hard 64 KiB), which Linux before 5.11 charges BPF maps to: %w: needs CAP_SYS_RESOURCE", unix.EPERM)
	for _, tc := range []struct {
		name        string
		load, raise error
		want        string
	}{
		{"limit not raised", load, raise, "RLIMIT_MEMLOCK"},
		{"limit raised", load, nil, "needs CAP_BPF and CAP_PERFMON"},
		{"other error", fmt.Errorf("load program: %w", unix.EINVAL), raise, "needs Linux 5.8 or later"},
	} {
		err := memlockError(PassBPFIter, tc.load, tc.raise)
		if !errors.Is(err, ErrNotSupported) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want ErrNotSupported saying %q", tc.name, err, tc.want)
		}
	}
}
