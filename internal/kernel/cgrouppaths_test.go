package kernel

import "testing"

// TestCgroupFileMatches: a /proc/PID/cgroup names a process's cgroup IDs when the directories of its
// unified cgroup and of its cgroups on the v1 cpu and memory hierarchies have those inode numbers; a
// controller on the unified hierarchy is not checked; one differing ID, or none checkable, is no match.
func TestCgroupFileMatches(t *testing.T) {
	t.Parallel()
	hybrid := []CgroupHierarchy{
		{MountPoint: "/sys/fs/cgroup/unified", V2: true},
		{MountPoint: "/sys/fs/cgroup/cpu,cpuacct", Controllers: []string{"cpu", "cpuacct"}},
		{MountPoint: "/sys/fs/cgroup/memory", Controllers: []string{"memory"}},
		{MountPoint: "/sys/fs/cgroup/pids", Controllers: []string{"pids"}},
	}
	v2 := []CgroupHierarchy{{MountPoint: "/sys/fs/cgroup", V2: true}}
	inodes := map[string]uint64{
		"/sys/fs/cgroup/unified/system.slice/a.service": 11,
		"/sys/fs/cgroup/cpu,cpuacct/kubepods/podA/c":    22,
		"/sys/fs/cgroup/memory/kubepods/podA/c":         33,
		"/sys/fs/cgroup/kubepods.slice/podA/c":          44,
	}
	ino := func(dir string) uint64 { return inodes[dir] }
	podA := "12:pids:/kubepods/podA/c\n4:memory:/kubepods/podA/c\n3:cpu,cpuacct:/kubepods/podA/c\n0::/system.slice/a.service\n"
	for _, tc := range []struct {
		name string
		file string
		hier []CgroupHierarchy
		ids  CgroupIDs
		want bool
	}{
		{"hybrid, all three", podA, hybrid, CgroupIDs{11, 22, 33}, true},
		{"hybrid, memory moved", podA, hybrid, CgroupIDs{11, 22, 34}, false},
		{"hybrid, unified moved", podA, hybrid, CgroupIDs{12, 22, 33}, false},
		{"v2: controllers not checked", "0::/kubepods.slice/podA/c\n", v2, CgroupIDs{44, 40, 41}, true},
		{"v2 moved", "0::/kubepods.slice/podA/c\n", v2, CgroupIDs{45, 40, 41}, false},
		{"no directory found", "0::/gone\n", v2, CgroupIDs{44}, false},
		{"malformed", "garbage\n", v2, CgroupIDs{44}, false},
	} {
		if got := cgroupFileMatches([]byte(tc.file), tc.hier, tc.ids, ino); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
