package sample

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// v2Fixture is a cgroup v2 host captured from this machine's v2 hierarchy (see ../kernel/testdata/README.md).
const v2FixtureProc, v2FixtureSys = "../kernel/testdata/v2host/proc", "../kernel/testdata/v2host/sys"

// TestNodeReaderV2Fixture: on a cgroup v2 host the reference is the top-level cgroups' usage_usec plus the
// root cgroup's threads' schedstat runtime, never the root's own (tick-synthesised) cpu.stat.
func TestNodeReaderV2Fixture(t *testing.T) {
	t.Parallel()
	r, err := NewNodeReader(v2FixtureProc, v2FixtureSys)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Reference() != RefCgroupV2 || r.CgroupSource() != filepath.Join(v2FixtureSys, "fs/cgroup") {
		t.Fatalf("reference %s from %s, want %s from the v2 root", r.Reference(), r.CgroupSource(), RefCgroupV2)
	}
	// system.slice 30272 µs + kubepods.slice 56320 µs, and the schedstat of threads 1 to 8.
	want := uint64(56320+30272)*1000 + 184464627 + 6129252 + 29755 + 14132
	if got := r.TasksCPU(); got != want {
		t.Errorf("task time %d ns, want %d", got, want)
	}
	if r.v2.RootThreads != 8 || len(r.v2.Usage) != 2 {
		t.Errorf("%d root threads and cgroups %v, want 8 and system.slice, kubepods.slice", r.v2.RootThreads, r.v2.Usage)
	}
}

func TestUseCgroupRoot(t *testing.T) {
	t.Parallel()
	r, err := NewNodeReader(fixtureProc, fixtureSys)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Reference() != RefCgroupV1 {
		t.Errorf("v1 fixture: reference %s, want %s", r.Reference(), RefCgroupV1)
	}
	// A cgroup below the root, as a cgroup namespace shows it, would measure one pod, not the node.
	err = r.UseCgroupRoot(filepath.Join(v2FixtureSys, "fs/cgroup/system.slice"))
	if err == nil || !strings.Contains(err.Error(), "not the root") {
		t.Errorf("a child cgroup accepted as the root: %v", err)
	}
	if err := r.UseCgroupRoot(t.TempDir()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("an empty directory: %v, want an error wrapping os.ErrNotExist", err)
	}
	if r.Reference() != RefCgroupV1 {
		t.Errorf("a refused root replaced the reference: now %s", r.Reference())
	}
	if err := r.UseCgroupRoot(filepath.Join(v2FixtureSys, "fs/cgroup")); err != nil || r.Reference() != RefCgroupV2 {
		t.Errorf("the v2 root: %v, reference %s", err, r.Reference())
	}
	none, err := NewNodeReader(fixtureProc, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer none.Close()
	if none.Reference() != RefProcStat || none.TasksCPU() != 0 || !hasPrefix(none.Limitations(), "node task time: ") {
		t.Errorf("no cgroups: reference %s, limitations %q", none.Reference(), none.Limitations())
	}
}

func hasPrefix(lines []string, prefix string) bool {
	for _, l := range lines {
		if strings.HasPrefix(l, prefix) {
			return true
		}
	}
	return false
}
