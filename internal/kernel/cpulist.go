package kernel

import (
	"fmt"
	"strconv"
	"strings"
)

// maxCPUs bounds a CPU number: Linux's NR_CPUS is at most 8192, so a larger one is a corrupt list.
const maxCPUs = 1 << 16

// ParseCPUList counts the CPUs in a list such as "0-3,8,10-11".
func ParseCPUList(s string) (int, error) {
	n := 0
	for _, part := range strings.Split(strings.TrimSpace(s), ",") {
		if part == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return 0, fmt.Errorf("cpu list %q: %w", s, err)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil {
				return 0, fmt.Errorf("cpu list %q: %w", s, err)
			}
		}
		if a < 0 || b < a || b >= maxCPUs {
			return 0, fmt.Errorf("cpu list %q: range %d-%d is not within 0-%d", s, a, b, maxCPUs-1)
		}
		n += b - a + 1
	}
	if n > maxCPUs {
		return 0, fmt.Errorf("cpu list %q: %d CPUs, more than Linux supports", s, n)
	}
	return n, nil
}

// OnlineCPUs counts the online CPUs in <sysRoot>/devices/system/cpu/online, 1 when the file is unreadable.
func OnlineCPUs(sysRoot string) int {
	b, err := ReadBounded(sysRoot + "/devices/system/cpu/online")
	if err != nil {
		return 1
	}
	n, err := ParseCPUList(string(b))
	if err != nil || n == 0 {
		return 1
	}
	return n
}
