package taskiter

import (
	"fmt"

	"github.com/tare-dev/tare/internal/kernel"
)

// Check tells cheaply, without loading anything, whether Open can work here: the privileges, and the kernel
// BTF that CO-RE needs. The error matches ErrNotSupported. Open can still fail (a kernel older than 5.8
// refuses both passes).
func Check() error { return check(kernel.CanLoadBPF(), kernel.KernelBTF) }

func check(privileged bool, btfPath string) error {
	if err := kernel.CheckBPF(privileged, btfPath); err != nil {
		return fmt.Errorf("%w: %w", ErrNotSupported, err)
	}
	return nil
}
