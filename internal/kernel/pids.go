package kernel

import (
	"fmt"
	"sort"
	"strconv"
)

// ListPIDs lists the processes under procRoot in ascending order: parents usually have lower PIDs.
func ListPIDs(procRoot string) ([]int, error) {
	names, err := ReadDirNames(procRoot)
	if err != nil {
		return nil, fmt.Errorf("listing processes in %s: %w", procRoot, err)
	}
	pids := make([]int, 0, len(names))
	for _, n := range names {
		if n[0] < '0' || n[0] > '9' {
			continue
		}
		if pid, err := strconv.Atoi(n); err == nil {
			pids = append(pids, pid)
		}
	}
	sort.Ints(pids)
	return pids, nil
}
