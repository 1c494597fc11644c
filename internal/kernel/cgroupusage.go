package kernel

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ParseCgroupUsage reads cumulative CPU in ns from cgroup v1 cpuacct.usage (name "cpuacct.usage") or v2
// cpu.stat (usage_usec; any other name).
func ParseCgroupUsage(name string, b []byte) (uint64, error) {
	if name == "cpuacct.usage" {
		return strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), " ")
		if ok && k == "usage_usec" {
			us, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("%s usage_usec: %w", name, err)
			}
			if us > math.MaxUint64/1000 {
				return 0, fmt.Errorf("%s: usage_usec %d overflows nanoseconds", name, us)
			}
			return us * 1000, nil
		}
	}
	return 0, fmt.Errorf("%s: no usage_usec line", name)
}
