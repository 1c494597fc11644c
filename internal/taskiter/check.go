package taskiter

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Capabilities from include/uapi/linux/capability.h (x/sys/unix lacks the newer two on some versions).
const (
	capSysAdmin = 21
	capPerfmon  = 38
	capBPF      = 39
)

// privileged reports whether this process may load a tracing BPF program: CAP_BPF with CAP_PERFMON (Linux
// 5.8 and later), or CAP_SYS_ADMIN, in its effective set. Asking first gives a clear error where the
// kernel's EPERM would surface, through the loader's feature probes, as an unsupported feature.
func privileged() bool {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return false
	}
	has := func(c uint) bool { return data[c/32].Effective&(1<<(c%32)) != 0 }
	return has(capSysAdmin) || (has(capBPF) && has(capPerfmon))
}

// Check tells cheaply, without loading anything, whether Open can work here: the privileges, and the kernel
// BTF that CO-RE needs. The error matches ErrNotSupported. Open can still fail (a kernel older than 6.7
// refuses the program).
func Check() error {
	if !privileged() {
		return fmt.Errorf("%w: loading a BPF program needs CAP_BPF and CAP_PERFMON, or CAP_SYS_ADMIN: run as root", ErrNotSupported)
	}
	if _, err := os.Stat("/sys/kernel/btf/vmlinux"); err != nil {
		return fmt.Errorf("%w: no kernel BTF (%w): needs a kernel built with CONFIG_DEBUG_INFO_BTF", ErrNotSupported, err)
	}
	return nil
}
