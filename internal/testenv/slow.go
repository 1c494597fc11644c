package testenv

import (
	"os"
	"strconv"
)

// SlowEnv names the factor by which this machine runs programs slower than a real one: scripts/kernelvm
// sets it inside its emulated VM (QEMU without KVM), where a system call takes ~10× as long. Unset: 1.
const SlowEnv = "TARE_TEST_SLOWDOWN"

// Slowdown is SlowEnv's factor (1 when unset or not a number ≥ 1). Tests multiply the slack they allow
// for the machine's own work around a measurement (a reply, a wake-up) by it, never the claim itself.
func Slowdown() float64 {
	f, err := strconv.ParseFloat(os.Getenv(SlowEnv), 64)
	if err != nil || f < 1 {
		return 1
	}
	return f
}
