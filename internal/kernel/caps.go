package kernel

import (
	"errors"
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

// CanLoadBPF reports whether this process may load and attach tracing BPF programs: CAP_BPF with
// CAP_PERFMON (Linux 5.8 and later), or CAP_SYS_ADMIN, in its effective set. Asking first gives a clear
// error where the kernel's EPERM would surface, through the loader's feature probes, as an unsupported
// feature. The BPF packages ask it through CheckBPF.
func CanLoadBPF() bool {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return false
	}
	has := func(c uint) bool { return data[c/32].Effective&(1<<(c%32)) != 0 }
	return has(capSysAdmin) || (has(capBPF) && has(capPerfmon))
}

// KernelBTF is where the kernel exposes its own BTF, which CO-RE and tp_btf programs need.
const KernelBTF = "/sys/kernel/btf/vmlinux"

// CheckBPF tells cheaply, without loading anything, whether CO-RE tracing programs can load here: privileged
// (CanLoadBPF's answer) and the kernel's BTF at btfPath (KernelBTF). The error says what is missing; the
// BPF packages (taskiter, blockio, exectrace) wrap it in their own "unavailable" error.
func CheckBPF(privileged bool, btfPath string) error {
	if !privileged {
		return errors.New("loading BPF programs needs CAP_BPF and CAP_PERFMON, or CAP_SYS_ADMIN: run as root")
	}
	if _, err := os.Stat(btfPath); err != nil {
		return fmt.Errorf("no kernel BTF (%w): needs a kernel built with CONFIG_DEBUG_INFO_BTF", err)
	}
	return nil
}
