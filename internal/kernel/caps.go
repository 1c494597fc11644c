package kernel

import "golang.org/x/sys/unix"

// Capabilities from include/uapi/linux/capability.h (x/sys/unix lacks the newer two on some versions).
const (
	capSysAdmin = 21
	capPerfmon  = 38
	capBPF      = 39
)

// CanLoadBPF reports whether this process may load and attach tracing BPF programs: CAP_BPF with
// CAP_PERFMON (Linux 5.8 and later), or CAP_SYS_ADMIN, in its effective set. Asking first gives a clear
// error where the kernel's EPERM would surface, through the loader's feature probes, as an unsupported
// feature. The task iterator (taskiter) and the block I/O tracer (blockio) ask it.
func CanLoadBPF() bool {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return false
	}
	has := func(c uint) bool { return data[c/32].Effective&(1<<(c%32)) != 0 }
	return has(capSysAdmin) || (has(capBPF) && has(capPerfmon))
}
