package taskiter

import (
	"fmt"

	"github.com/tare-dev/tare/internal/kernel"
)

// Check tells cheaply, without loading anything, whether Open can work here: the privileges, and the kernel
// BTF that CO-RE needs. The error matches ErrNotSupported. Open can still fail (a kernel older than 6.7
// refuses the program).
func Check() error {
	if err := kernel.CheckBPF(kernel.CanLoadBPF(), kernel.KernelBTF); err != nil {
		return fmt.Errorf("%w: %w", ErrNotSupported, err)
	}
	return nil
}
