package taskiter

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf/rlimit"
	"golang.org/x/sys/unix"
)

// Before Linux 5.11 the kernel charges the memory of BPF maps and programs to the loading process's
// RLIMIT_MEMLOCK; from 5.11 to its memory cgroup. The bpf-iter pass (5.8 or later) creates a 16,384-entry
// hash map, about 2 MB at creation, where the usual default limit is 64 KiB or 8 MiB: on 5.8 to 5.10 it
// may not load unless the limit is raised.

// raiseMemlock lifts RLIMIT_MEMLOCK where the kernel charges BPF memory to it, and does nothing where it
// does not (cilium/ebpf's rlimit.RemoveMemlock: the package's init, in every tare process, creates a
// one-entry array map with the soft limit at 0 for a moment to tell, and restores the limit). Lifting it above the hard limit needs CAP_SYS_RESOURCE; the error
// then says so, and the caller still tries to load within the limit it has.
func raiseMemlock() error {
	if err := rlimit.RemoveMemlock(); err != nil {
		return fmt.Errorf("raising RLIMIT_MEMLOCK (%s), which Linux before 5.11 charges BPF maps to: %w: "+
			"needs CAP_SYS_RESOURCE, or a higher limit (ulimit -l, systemd's LimitMEMLOCK=)", memlockNow(), err)
	}
	return nil
}

// memlockNow describes the current RLIMIT_MEMLOCK, for error messages.
func memlockNow() string {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_MEMLOCK, &lim); err != nil {
		return "unknown"
	}
	show := func(v uint64) string {
		if v == unix.RLIM_INFINITY {
			return "unlimited"
		}
		return fmt.Sprintf("%d KiB", v/1024)
	}
	return fmt.Sprintf("soft %s, hard %s", show(lim.Cur), show(lim.Max))
}

// memlockError explains a load refused with EPERM after the limit could not be raised: on a kernel that
// charges BPF memory to RLIMIT_MEMLOCK that is the likely cause. The probe that decides whether the limit
// matters is itself a bpf(2) call, which a seccomp profile or missing privileges also refuse with EPERM,
// so the message names both.
func memlockError(p Pass, err, raiseErr error) error {
	if raiseErr == nil || !errors.Is(err, unix.EPERM) {
		return loadError(p, err)
	}
	return fmt.Errorf("%w: loading the BPF task iterator: %w; %w (or bpf(2) is refused outright: it needs CAP_BPF and CAP_PERFMON, "+
		"or CAP_SYS_ADMIN, and a seccomp profile that allows it)", ErrNotSupported, err, raiseErr)
}
