package kernel

import (
	"fmt"
	"slices"

	"github.com/prometheus/procfs"
)

// CgroupHierarchy is a mounted cgroup hierarchy: the v2 tree, or a v1 hierarchy with its controllers.
type CgroupHierarchy struct {
	MountPoint string
	V2         bool
	// Controllers are a v1 hierarchy's mount options other than rw and ro (cpu, cpuacct, freezer, name …);
	// none for v2, whose controllers are the tree's cgroup.controllers.
	Controllers []string
}

// Has says whether h is a v1 hierarchy with controller.
func (h CgroupHierarchy) Has(controller string) bool {
	return slices.Contains(h.Controllers, controller)
}

// CgroupHierarchies picks the cgroup hierarchies out of a mount table, in its order, each mount point
// once (a hierarchy bind-mounted twice is the first mount's).
func CgroupHierarchies(mounts []*procfs.MountInfo) []CgroupHierarchy {
	var out []CgroupHierarchy
	for _, m := range mounts {
		if m.FSType != "cgroup" && m.FSType != "cgroup2" {
			continue
		}
		if slices.ContainsFunc(out, func(h CgroupHierarchy) bool { return h.MountPoint == m.MountPoint }) {
			continue
		}
		h := CgroupHierarchy{MountPoint: m.MountPoint, V2: m.FSType == "cgroup2"}
		if !h.V2 {
			for o := range m.SuperOptions {
				if o != "rw" && o != "ro" {
					h.Controllers = append(h.Controllers, o)
				}
			}
			slices.Sort(h.Controllers)
		}
		out = append(out, h)
	}
	return out
}

// ReadCgroupHierarchies reads the cgroup hierarchies mounted where this process sees them, from
// self/mountinfo under procRoot.
func ReadCgroupHierarchies(procRoot string) ([]CgroupHierarchy, error) {
	fs, err := procfs.NewFS(procRoot)
	if err != nil {
		return nil, fmt.Errorf("reading mounts: %w", err)
	}
	self, err := fs.Self()
	if err != nil {
		return nil, fmt.Errorf("reading mounts: %w", err)
	}
	mounts, err := self.MountInfo()
	if err != nil {
		return nil, fmt.Errorf("reading mounts: %w", err)
	}
	return CgroupHierarchies(mounts), nil
}
