package lab

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/procfs"
)

// TestPauseFreezerFixture picks the pause hierarchies from this machine's mountinfo (v1 controllers plus
// an empty v2 tree at /sys/fs/cgroup/unified) and finds a process's cgroup in each from its
// /proc/PID/cgroup, both captured under testdata/pause/proc/1.
func TestPauseFreezerFixture(t *testing.T) {
	t.Parallel()
	fs, err := procfs.NewFS("testdata/pause/proc")
	if err != nil {
		t.Fatal(err)
	}
	p, err := fs.Proc(1)
	if err != nil {
		t.Fatal(err)
	}
	mounts, err := p.MountInfo()
	if err != nil {
		t.Fatal(err)
	}
	h, err := pickFreezer(mounts)
	if err != nil {
		t.Fatal(err)
	}
	want := freezerHierarchies{Freezer: "/sys/fs/cgroup/freezer", Acct: "/sys/fs/cgroup/cpuacct"}
	if diff := cmp.Diff(want, h); diff != "" {
		t.Errorf("pickFreezer (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"/sys/fs/cgroup/freezer", "/sys/fs/cgroup/cpuacct"}, h.mounts()); diff != "" {
		t.Errorf("mounts (-want +got):\n%s", diff)
	}
	cgs, err := p.Cgroups()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		v2         bool
		controller string
		want       string
		ok         bool
	}{
		{false, "freezer", "/", true},
		{false, "cpuacct", "/", true},
		{false, "memory", "/session-1", true},
		{true, "", "/", true},
		{false, "hugetlb", "", false},
	} {
		got, ok := cgroupIn(cgs, c.v2, c.controller)
		if got != c.want || ok != c.ok {
			t.Errorf("cgroupIn(v2 %v, %s) = %q, %v, want %q, %v", c.v2, c.controller, got, ok, c.want, c.ok)
		}
	}
}

// TestPauseFreezerPick covers the machines the fixture is not: pure cgroup v2, v1 without a freezer
// (v2 beside it), and none.
func TestPauseFreezerPick(t *testing.T) {
	t.Parallel()
	v1 := func(mp string, opts ...string) *procfs.MountInfo {
		so := map[string]string{"rw": ""}
		for _, o := range opts {
			so[o] = ""
		}
		return &procfs.MountInfo{FSType: "cgroup", MountPoint: mp, SuperOptions: so}
	}
	v2 := &procfs.MountInfo{FSType: "cgroup2", MountPoint: "/sys/fs/cgroup", SuperOptions: map[string]string{"rw": ""}}
	for _, c := range []struct {
		name   string
		mounts []*procfs.MountInfo
		want   freezerHierarchies
		err    error
	}{
		{"pure v2", []*procfs.MountInfo{v2}, freezerHierarchies{Freezer: "/sys/fs/cgroup", V2: true}, nil},
		{"v1 cpu,cpuacct joint, freezer", []*procfs.MountInfo{v1("/sys/fs/cgroup/cpu,cpuacct", "cpu", "cpuacct"), v1("/sys/fs/cgroup/freezer", "freezer"), v2},
			freezerHierarchies{Freezer: "/sys/fs/cgroup/freezer", Acct: "/sys/fs/cgroup/cpu,cpuacct"}, nil},
		{"v1 without freezer, v2 beside", []*procfs.MountInfo{v1("/sys/fs/cgroup/cpuacct", "cpuacct"), v2}, freezerHierarchies{Freezer: "/sys/fs/cgroup", V2: true}, nil},
		{"none", []*procfs.MountInfo{{FSType: "tmpfs", MountPoint: "/sys/fs/cgroup"}}, freezerHierarchies{}, ErrNoFreezer},
	} {
		got, err := pickFreezer(c.mounts)
		if !errors.Is(err, c.err) {
			t.Errorf("%s: error %v, want %v", c.name, err, c.err)
		}
		if diff := cmp.Diff(c.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.name, diff)
		}
	}
}

// TestPauseFreezerParse reads freezer.state and cgroup.events as the kernel writes them.
func TestPauseFreezerParse(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		v2   bool
		in   string
		want freezeState
		bad  bool
	}{
		{false, "THAWED\n", thawed, false},
		{false, "FREEZING\n", freezing, false},
		{false, "FROZEN\n", frozen, false},
		{false, "frozen\n", thawed, true},
		{false, "", thawed, true},
		{true, "populated 1\nfrozen 1\n", frozen, false},
		{true, "populated 0\nfrozen 0\n", thawed, false},
		{true, "populated 1\n", thawed, true},
		{true, "populated 1\nfrozen 2\n", thawed, true},
	} {
		parse := parseFreezerState
		if c.v2 {
			parse = parseCgroupEvents
		}
		got, err := parse([]byte(c.in))
		if (err != nil) != c.bad || (err != nil && !errors.Is(err, errMalformedCgroupFile)) || got != c.want {
			t.Errorf("parse(v2 %v, %q) = %v, %v; want %v, malformed %v", c.v2, c.in, got, err, c.want, c.bad)
		}
	}
}

// FuzzFreezerFiles: neither parser panics, and an error is always the malformed sentinel.
func FuzzFreezerFiles(f *testing.F) {
	for _, s := range []string{"THAWED\n", "FROZEN", "populated 1\nfrozen 1\n", "frozen", "\x00"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, parse := range []func([]byte) (freezeState, error){parseFreezerState, parseCgroupEvents} {
			if _, err := parse(b); err != nil && !errors.Is(err, errMalformedCgroupFile) {
				t.Errorf("error %v is not errMalformedCgroupFile", err)
			}
		}
	})
}
