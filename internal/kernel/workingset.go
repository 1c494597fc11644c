package kernel

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// WorkingSet is a memory cgroup's working set as the kubelet's eviction manager counts it (cAdvisor's
// container_memory_working_set_bytes): the memory charged to the cgroup minus its inactive file pages,
// which the kernel reclaims first. memory.available, the signal evictionHard's threshold applies to, is
// the node's capacity minus the root cgroup's working set.
type WorkingSet struct {
	Usage        uint64 `json:"usage_bytes"`         // v1 memory.usage_in_bytes, v2 memory.current
	InactiveFile uint64 `json:"inactive_file_bytes"` // memory.stat: v1 total_inactive_file (the subtree's), v2 inactive_file
	Bytes        uint64 `json:"working_set_bytes"`   // Usage − InactiveFile, 0 when that is below zero
}

// ReadWorkingSet reads the working set of the memory cgroup at dir: a directory of a cgroup v1 memory
// hierarchy (memory.usage_in_bytes) or of a v2 one (memory.current). The v2 root has no memory.current:
// there its usage is memory.stat's anon + file, as runc's cgroup library (which cAdvisor and so the
// kubelet's eviction manager read the node through) emulates it (ParseRootWorkingSet). A directory with
// no memory.stat (a v2 cgroup whose parent has not enabled the memory controller, a v2 root without it)
// is ErrNotSupported.
func ReadWorkingSet(dir string) (WorkingSet, error) {
	stat, err := ReadBounded(filepath.Join(dir, "memory.stat"))
	if errors.Is(err, os.ErrNotExist) {
		return WorkingSet{}, fmt.Errorf("%s: %w", dir, NotSupported("no memory.stat: not a memory cgroup (cgroup v2 without the memory controller, or the v2 root)"))
	}
	if err != nil {
		return WorkingSet{}, err
	}
	v2 := false
	usage, err := ReadBounded(filepath.Join(dir, "memory.usage_in_bytes"))
	if errors.Is(err, os.ErrNotExist) {
		v2 = true
		usage, err = ReadBounded(filepath.Join(dir, "memory.current"))
		if errors.Is(err, os.ErrNotExist) {
			ws, err := ParseRootWorkingSet(stat)
			if err != nil {
				return WorkingSet{}, fmt.Errorf("%s (a cgroup v2 root): %w", dir, err)
			}
			return ws, nil
		}
	}
	if err != nil {
		return WorkingSet{}, err
	}
	ws, err := ParseWorkingSet(usage, stat, v2)
	if err != nil {
		return WorkingSet{}, fmt.Errorf("%s: %w", dir, err)
	}
	return ws, nil
}

// ParseRootWorkingSet computes the working set of the cgroup v2 root from its memory.stat alone: usage is
// anon + file (what v1's memory.usage_in_bytes counts: anonymous and page cache pages), less inactive_file.
// Errors wrap ErrMalformed.
func ParseRootWorkingSet(stat []byte) (WorkingSet, error) {
	v, err := statValues(stat, "anon", "file", "inactive_file")
	if err != nil {
		return WorkingSet{}, err
	}
	return newWorkingSet(v[0]+v[1], v[2]), nil
}

// newWorkingSet is usage less inactive file pages, 0 when that is below zero.
func newWorkingSet(usage, inactiveFile uint64) WorkingSet {
	ws := WorkingSet{Usage: usage, InactiveFile: inactiveFile}
	if usage > inactiveFile {
		ws.Bytes = usage - inactiveFile
	}
	return ws
}

// statValues reads the keys' values from a memory.stat, in the order asked; a key missing or a value that
// is no number wraps ErrMalformed.
func statValues(stat []byte, keys ...string) ([]uint64, error) {
	out := make([]uint64, len(keys))
	found := make([]bool, len(keys))
	sc := bufio.NewScanner(bytes.NewReader(stat))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		for i, key := range keys {
			if k != key || found[i] {
				continue
			}
			n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return nil, fmt.Errorf("memory.stat %s %q: %w", key, v, ErrMalformed)
			}
			out[i], found[i] = n, true
		}
	}
	for i, key := range keys {
		if !found[i] {
			return nil, fmt.Errorf("memory.stat: no %s line: %w", key, ErrMalformed)
		}
	}
	return out, nil
}

// ParseWorkingSet computes the working set from a cgroup's usage file (v1 memory.usage_in_bytes, v2
// memory.current) and its memory.stat. Errors wrap ErrMalformed.
func ParseWorkingSet(usage, stat []byte, v2 bool) (WorkingSet, error) {
	u, err := strconv.ParseUint(strings.TrimSpace(string(usage)), 10, 64)
	if err != nil {
		return WorkingSet{}, fmt.Errorf("memory usage %q: %w", bytes.TrimSpace(usage), ErrMalformed)
	}
	key := "total_inactive_file"
	if v2 {
		key = "inactive_file"
	}
	v, err := statValues(stat, key)
	if err != nil {
		return WorkingSet{}, err
	}
	return newWorkingSet(u, v[0]), nil
}
