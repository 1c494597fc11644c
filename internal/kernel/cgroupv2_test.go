package kernel

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// v2Fixture is a cgroup v2 host captured from this machine's v2 hierarchy (see testdata/README.md).
const v2FixtureProc, v2FixtureSys = "testdata/v2host/proc", "testdata/v2host/sys"

func TestParseTIDList(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want []int
		err  bool
	}{
		{"", []int{}, false},
		{"1\n2\n30000\n", []int{1, 2, 30000}, false},
		{"7", []int{7}, false},
		{"1\n\n2\n", nil, true},
		{"1 2\n", nil, true},
		{"-1\n", nil, true},
		{"99999999999\n", nil, true},
	} {
		got, err := parseTIDList([]byte(tc.in))
		if (err != nil) != tc.err {
			t.Errorf("parseTIDList(%q) error %v, want error %v", tc.in, err, tc.err)
			continue
		}
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Errorf("parseTIDList(%q): %v does not wrap ErrMalformed", tc.in, err)
			}
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("parseTIDList(%q) (-want +got):\n%s", tc.in, diff)
		}
	}
}

// TestCgroupV2Fixture: the reference is the top-level cgroups' usage_usec plus the root cgroup's threads'
// schedstat runtime, never the root's own (tick-synthesised) cpu.stat.
func TestCgroupV2Fixture(t *testing.T) {
	t.Parallel()
	c, err := OpenCgroupV2Tasks(filepath.Join(v2FixtureSys, "fs/cgroup"), v2FixtureProc)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// system.slice 30272 µs + kubepods.slice 56320 µs, and the schedstat of threads 1 to 8.
	want := uint64(56320+30272)*1000 + 184464627 + 6129252 + 29755 + 14132
	if got, err := c.Read(); err != nil || got != want {
		t.Errorf("task time %d ns (%v), want %d", got, err, want)
	}
	if c.RootThreads != 8 || len(c.Usage) != 2 {
		t.Errorf("%d root threads and cgroups %v, want 8 and system.slice, kubepods.slice", c.RootThreads, c.Usage)
	}
	if _, err := OpenCgroupV2Tasks(filepath.Join(v2FixtureSys, "fs/cgroup/system.slice"), v2FixtureProc); err == nil ||
		!strings.Contains(err.Error(), "not the root") {
		t.Errorf("a child cgroup accepted as the root: %v", err)
	}
}

// TestCgroupV2Follows: cgroups and root threads that come and go between readings.
func TestCgroupV2Follows(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	copyTree(t, "testdata/v2host", root)
	proc, cg := filepath.Join(root, "proc"), filepath.Join(root, "sys/fs/cgroup")
	c, err := OpenCgroupV2Tasks(cg, proc)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	first, err := c.Read()
	if err != nil {
		t.Fatal(err)
	}
	write := func(rel, s string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, rel)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, rel), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("sys/fs/cgroup/system.slice/cpu.stat", "usage_usec 31272\nuser_usec 31272\nsystem_usec 0\n") // +1 ms
	if err := os.RemoveAll(filepath.Join(cg, "kubepods.slice")); err != nil {                          // removed: nothing more from it
		t.Fatal(err)
	}
	write("sys/fs/cgroup/user.slice/cpu.stat", "usage_usec 700\n")    // created: all of it is new
	write("proc/1/schedstat", "184465627 273430177 471\n")            // +1000 ns
	write("proc/2/schedstat", "500 0 1\n")                            // TID reused: all of it is new
	write("proc/9/schedstat", "5000 0 1\n")                           // born
	write("sys/fs/cgroup/cgroup.threads", "1\n2\n3\n4\n5\n6\n7\n9\n") // 8 left the root
	second, err := c.Read()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := second-first, uint64(1000*1000+700*1000+1000+500+5000); got != want {
		t.Errorf("the reference grew by %d ns, want %d", got, want)
	}
	if c.Departed != 1 || c.RootThreads != 8 {
		t.Errorf("%d departed and %d root threads, want 1 and 8", c.Departed, c.RootThreads)
	}
	if _, ok := c.Usage["kubepods.slice"]; ok || c.Usage["user.slice"] != 700*1000 {
		t.Errorf("top-level cgroups %v", c.Usage)
	}
}

func copyTree(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		dst := filepath.Join(to, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}
