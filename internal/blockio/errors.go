package blockio

import (
	"errors"
	"fmt"
	"os"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/tare-dev/tare/internal/kernel"
)

// ErrNotSupported means block I/O cannot be traced here: a process without CAP_BPF and CAP_PERFMON (or
// CAP_SYS_ADMIN), a kernel without BTF, or one older than 6.5 (no block_io_start tracepoint). The error
// wrapping it says which and what to do. Callers fall back to the byte counts of /proc/PID/io and say so.
var ErrNotSupported = kernel.NotSupported("block I/O tracing unavailable")

// Check tells cheaply, without loading anything, whether Open can work here: the privileges, and the kernel
// BTF. The error matches ErrNotSupported. Open can still fail (a kernel older than 6.5).
func Check() error { return check(kernel.CanLoadBPF(), kernel.KernelBTF) }

func check(privileged bool, btfPath string) error {
	if err := kernel.CheckBPF(privileged, btfPath); err != nil {
		return fmt.Errorf("%w: %w", ErrNotSupported, err)
	}
	return nil
}

// loadError classifies a failure to load or attach the programs: missing privileges, a kernel without BTF,
// or one without the block tracepoints all mean that tracing is unavailable here, and say why.
func loadError(what string, err error) error {
	switch {
	case errors.Is(err, unix.EPERM), errors.Is(err, unix.EACCES):
		return fmt.Errorf("%w: %s: %w: needs CAP_BPF and CAP_PERFMON, or CAP_SYS_ADMIN (run as root), and no lockdown or seccomp policy forbidding BPF", ErrNotSupported, what, err)
	case errors.Is(err, ebpf.ErrNotSupported), errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("%w: %s: %w: needs kernel BTF (CONFIG_DEBUG_INFO_BTF) and Linux 6.5 or later (the block_io_start tracepoint)", ErrNotSupported, what, err)
	}
	var verr *ebpf.VerifierError
	if errors.As(err, &verr) {
		return fmt.Errorf("%w: the kernel's verifier refused the block I/O programs (needs Linux 6.5 or later): %w", ErrNotSupported, err)
	}
	return fmt.Errorf("%w: %s: %w", ErrNotSupported, what, err)
}
