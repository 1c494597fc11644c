package kernel

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/procfs"
)

func TestCgroupHierarchies(t *testing.T) {
	t.Parallel()
	mount := func(fsType, mp string, opts ...string) *procfs.MountInfo {
		so := map[string]string{"rw": ""}
		for _, o := range opts {
			so[o] = ""
		}
		return &procfs.MountInfo{FSType: fsType, MountPoint: mp, SuperOptions: so}
	}
	in := []*procfs.MountInfo{
		mount("tmpfs", "/sys/fs/cgroup"),
		mount("cgroup", "/sys/fs/cgroup/cpu,cpuacct", "cpuacct", "cpu"),
		mount("cgroup", "/sys/fs/cgroup/freezer", "freezer"),
		mount("cgroup2", "/sys/fs/cgroup/unified", "nsdelegate"),
		mount("cgroup", "/sys/fs/cgroup/freezer", "freezer"), // bound twice
		mount("proc", "/proc"),
	}
	want := []CgroupHierarchy{
		{MountPoint: "/sys/fs/cgroup/cpu,cpuacct", Controllers: []string{"cpu", "cpuacct"}},
		{MountPoint: "/sys/fs/cgroup/freezer", Controllers: []string{"freezer"}},
		{MountPoint: "/sys/fs/cgroup/unified", V2: true},
	}
	got := CgroupHierarchies(in)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("CgroupHierarchies (-want +got):\n%s", diff)
	}
	if !got[0].Has("cpuacct") || got[0].Has("freezer") || got[2].Has("cpu") {
		t.Errorf("Has: %+v", got)
	}
}

// TestReadCgroupHierarchies: every hierarchy this machine mounts is a cgroup directory, as the kernel
// says by the file every cgroup has (cgroup.procs).
func TestReadCgroupHierarchies(t *testing.T) {
	t.Parallel()
	hier, err := ReadCgroupHierarchies("/proc")
	if err != nil {
		t.Fatal(err)
	}
	if len(hier) == 0 {
		t.Skip("no cgroup hierarchy mounted on this machine")
	}
	for _, h := range hier {
		if _, err := os.Stat(filepath.Join(h.MountPoint, "cgroup.procs")); err != nil {
			t.Errorf("%+v: not a cgroup directory: %v", h, err)
		}
	}
}
