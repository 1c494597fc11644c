package lab

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/procfs"

	"github.com/tare-dev/tare/internal/kernel"
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
	h, err := pickFreezer(kernel.CgroupHierarchies(mounts), FreezerAuto)
	if err != nil {
		t.Fatal(err)
	}
	want := freezerHierarchies{Freezer: "/sys/fs/cgroup/freezer", Acct: "/sys/fs/cgroup/cpuacct"}
	if diff := cmp.Diff(want, h); diff != "" {
		t.Errorf("pickFreezer (-want +got):\n%s", diff)
	}
	if h1, err := pickFreezer(kernel.CgroupHierarchies(mounts), FreezerV1); err != nil || h1 != h {
		t.Errorf("pickFreezer v1 = %+v, %v; want %+v as auto", h1, err, h)
	}
	h2, err := pickFreezer(kernel.CgroupHierarchies(mounts), FreezerV2)
	if diff := cmp.Diff(freezerHierarchies{Freezer: "/sys/fs/cgroup/unified", V2: true}, h2); err != nil || diff != "" {
		t.Errorf("pickFreezer v2 (-want +got): %v\n%s", err, diff)
	}
	if diff := cmp.Diff([]string{"/sys/fs/cgroup/unified"}, h2.mounts()); diff != "" {
		t.Errorf("v2 mounts (-want +got):\n%s", diff)
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
// (v2 beside it), and none; with each freezer asked for.
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
	pureV2 := []*procfs.MountInfo{v2}
	joint := []*procfs.MountInfo{v1("/sys/fs/cgroup/cpu,cpuacct", "cpu", "cpuacct"), v1("/sys/fs/cgroup/freezer", "freezer"), v2}
	noFreezer := []*procfs.MountInfo{v1("/sys/fs/cgroup/cpuacct", "cpuacct"), v2}
	v1Only := []*procfs.MountInfo{v1("/sys/fs/cgroup/cpuacct", "cpuacct"), v1("/sys/fs/cgroup/freezer", "freezer")}
	none := []*procfs.MountInfo{{FSType: "tmpfs", MountPoint: "/sys/fs/cgroup"}}
	onV2 := freezerHierarchies{Freezer: "/sys/fs/cgroup", V2: true}
	for _, c := range []struct {
		name   string
		mounts []*procfs.MountInfo
		want   Freezer
		got    freezerHierarchies
		err    error
		says   string
	}{
		{"pure v2", pureV2, FreezerAuto, onV2, nil, ""},
		{"pure v2, unset", pureV2, "", onV2, nil, ""},
		{"pure v2, v2 asked", pureV2, FreezerV2, onV2, nil, ""},
		{"pure v2, v1 asked", pureV2, FreezerV1, freezerHierarchies{}, ErrNoFreezer, "the v1 freezer controller is not mounted"},
		{"v1 cpu,cpuacct joint, freezer", joint, FreezerAuto, freezerHierarchies{Freezer: "/sys/fs/cgroup/freezer", Acct: "/sys/fs/cgroup/cpu,cpuacct"}, nil, ""},
		{"v1 and v2, v2 asked", joint, FreezerV2, onV2, nil, ""},
		{"v1 without freezer, v2 beside", noFreezer, FreezerAuto, onV2, nil, ""},
		{"v1 without freezer, v1 asked", noFreezer, FreezerV1, freezerHierarchies{}, ErrNoFreezer, "pause with --freezer v2 or auto"},
		{"v1 only, v2 asked", v1Only, FreezerV2, freezerHierarchies{}, ErrNoFreezer, "cgroup v2 is not mounted (no cgroup2 mount)"},
		{"none", none, FreezerAuto, freezerHierarchies{}, ErrNoFreezer, "mount the v1 freezer controller or cgroup v2"},
		{"unknown freezer", joint, "v3", freezerHierarchies{}, nil, `freezer "v3": want auto, v1 or v2`},
	} {
		got, err := pickFreezer(kernel.CgroupHierarchies(c.mounts), c.want)
		if (c.says != "") != (err != nil) || c.err != nil && !errors.Is(err, c.err) || err != nil && !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: error %v, want %v saying %q", c.name, err, c.err, c.says)
		}
		if diff := cmp.Diff(c.got, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.name, diff)
		}
	}
}

// TestPauseFreezerParseName reads --freezer's values.
func TestPauseFreezerParseName(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]Freezer{"": FreezerAuto, "auto": FreezerAuto, "v1": FreezerV1, "v2": FreezerV2, "V2": "", "cgroup2": ""} {
		got, err := ParseFreezer(in)
		if got != want || (err != nil) != (want == "") {
			t.Errorf("ParseFreezer(%q) = %q, %v; want %q", in, got, err, want)
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
