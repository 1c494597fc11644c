package taskiter

import (
	"fmt"
	"os"

	"github.com/tare-dev/tare/internal/kernel"
)

// Check tells cheaply, without loading anything, whether Open can work here: the privileges, and the kernel
// BTF that CO-RE needs. The error matches ErrNotSupported. Open can still fail (a kernel older than 6.7
// refuses the program).
func Check() error {
	if !kernel.CanLoadBPF() {
		return fmt.Errorf("%w: loading a BPF program needs CAP_BPF and CAP_PERFMON, or CAP_SYS_ADMIN: run as root", ErrNotSupported)
	}
	if _, err := os.Stat("/sys/kernel/btf/vmlinux"); err != nil {
		return fmt.Errorf("%w: no kernel BTF (%w): needs a kernel built with CONFIG_DEBUG_INFO_BTF", ErrNotSupported, err)
	}
	return nil
}
