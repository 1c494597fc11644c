package experiment

import (
	"fmt"

	"github.com/prometheus/procfs"
)

// labMemory is what one control-plane-only lab holds: 16 upstream labs side by side held 465 MiB each
// (the resident memory of etcd, the API server, the controller manager and the scheduler, 2026-11-27),
// with some room for their growth.
const labMemory = 500 << 20

// checkMemory refuses to start n labs (n > 1) that the machine's available memory (MemAvailable under
// procRoot) cannot hold: started anyway, they would push the machine into swap or the OOM killer in the
// middle of the experiment. A meminfo that cannot be read does not stop anything.
func checkMemory(procRoot string, n int) error {
	if n <= 1 {
		return nil
	}
	if procRoot == "" {
		procRoot = procfs.DefaultMountPoint
	}
	fs, err := procfs.NewFS(procRoot)
	if err != nil {
		return nil
	}
	m, err := fs.Meminfo()
	if err != nil || m.MemAvailableBytes == nil {
		return nil
	}
	return memoryFits(n, *m.MemAvailableBytes)
}

// memoryFits says whether n labs fit in available bytes, and if not, how many do.
func memoryFits(n int, available uint64) error {
	need := uint64(n) * labMemory
	if need <= available {
		return nil
	}
	fit := available / labMemory
	return fmt.Errorf("%w: %d labs need about %.1f GiB of memory (%d MiB each) and the machine has %.1f GiB available (MemAvailable): ask for at most %d replicas, or free memory",
		ErrStart, n, float64(need)/(1<<30), labMemory>>20, float64(available)/(1<<30), fit)
}
