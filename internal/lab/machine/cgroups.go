package machine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/tare-dev/tare/internal/kernel"
)

// The lab's cgroups: Up makes one root per hierarchy for the kubelet (MakeCgroupRoot); Down kills what
// is left in it and removes it (RemoveCgroups).

// CgroupMounts returns the mount points of every cgroup hierarchy (v1 controllers and the v2 tree).
func CgroupMounts() ([]string, error) {
	hier, err := kernel.ReadCgroupHierarchies(kernel.HostProc)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(hier))
	for _, h := range hier {
		out = append(out, h.MountPoint)
	}
	return out, nil
}

// CgroupRoots are the directories of the cgroup name at the top of every hierarchy, those MakeCgroupRoot
// makes, whether they exist or not.
func CgroupRoots(name string) ([]string, error) {
	hier, err := CgroupMounts()
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(hier))
	for _, h := range hier {
		out = append(out, filepath.Join(h, name))
	}
	return out, nil
}

// CgroupRootLeftovers lists the directories of the cgroup name still at the top of a hierarchy.
func CgroupRootLeftovers(name string) []string {
	roots, _ := CgroupRoots(name)
	var out []string
	for _, d := range roots {
		if _, err := os.Stat(d); err == nil {
			out = append(out, "cgroup "+d)
		}
	}
	return out
}

// MakeCgroupRoot makes the cgroup name (the kubelet's cgroupRoot) at the top of every hierarchy, copying
// cpuset.cpus and cpuset.mems from the parent (a v1 cpuset cgroup without them cannot hold tasks). It
// returns the directories it created.
func MakeCgroupRoot(name string) ([]string, error) {
	roots, err := CgroupRoots(name)
	if err != nil {
		return nil, err
	}
	var made []string
	for _, d := range roots {
		if err := os.Mkdir(d, 0o755); err != nil {
			if errors.Is(err, os.ErrExist) {
				made = append(made, d)
				continue
			}
			return made, fmt.Errorf("creating the lab cgroup %s: %w", d, err)
		}
		made = append(made, d)
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			if b, err := os.ReadFile(filepath.Join(filepath.Dir(d), f)); err == nil {
				_ = os.WriteFile(filepath.Join(d, f), b, 0o644)
			}
		}
	}
	return made, nil
}

// RemoveCgroups kills every task left in the lab's cgroups (pod processes whose shim died) and removes
// the directories, deepest first.
func RemoveCgroups(roots []string) error {
	KillCgroupTree(roots...)
	dirs := CgroupDirs(roots)
	sort.Slice(dirs, func(i, j int) bool { return strings.Count(dirs[i], "/") > strings.Count(dirs[j], "/") })
	var errs []error
	for _, d := range dirs {
		var err error
		for range 50 { // killed tasks take a moment to leave
			if err = syscall.Rmdir(d); err == nil || errors.Is(err, syscall.ENOENT) {
				err = nil
				break
			}
			if !errors.Is(err, syscall.EBUSY) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("removing cgroup %s: %w", d, err))
		}
	}
	return errors.Join(errs...)
}

// CgroupPIDs lists the processes in the cgroup dir (its cgroup.procs; none when it cannot be read).
func CgroupPIDs(dir string) []int {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			out = append(out, pid)
		}
	}
	return out
}

// KillCgroupTree sends SIGKILL to every task in the cgroups under roots.
func KillCgroupTree(roots ...string) {
	for _, d := range CgroupDirs(roots) {
		for _, pid := range CgroupPIDs(d) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// CgroupDirs lists every cgroup directory under roots, parents before children.
func CgroupDirs(roots []string) []string {
	var dirs []string
	for _, r := range roots {
		_ = filepath.WalkDir(r, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
	}
	return dirs
}
