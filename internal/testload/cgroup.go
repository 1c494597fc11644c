package testload

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tare-dev/tare/internal/testenv"
)

// KubepodsCgroup creates a real kubepods/burstable/pod<uid>/<container> cgroup (v1: in the cpu, cpuacct
// and pids hierarchies; v2: in the unified one), the layout kubelet's cgroupfs driver makes, moves pid
// into it, and removes it all when the test ends.
func KubepodsCgroup(t testing.TB, uid, container string, pid int) {
	t.Helper()
	rel := filepath.Join("kubepods", "burstable", "pod"+uid, container)
	var roots []string
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		roots = []string{"/sys/fs/cgroup"}
	} else {
		for _, c := range []string{"cpu", "cpuacct", "pids"} {
			if _, err := os.Stat(filepath.Join("/sys/fs/cgroup", c)); err == nil {
				roots = append(roots, filepath.Join("/sys/fs/cgroup", c))
			}
		}
	}
	if len(roots) == 0 {
		testenv.Unavailable(t, "no cgroup hierarchy to create a pod cgroup in")
	}
	for _, root := range roots {
		dir := filepath.Join(root, rel)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			testenv.Unavailable(t, "cannot create cgroups here: %v", err)
		}
		t.Cleanup(func() { removeCgroupTree(root, rel) })
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644); err != nil {
			t.Fatalf("moving %d into %s: %v", pid, dir, err)
		}
	}
}

// removeCgroupTree moves any process left back to the root and removes the created directories.
func removeCgroupTree(root, rel string) {
	parts := strings.Split(rel, string(filepath.Separator))
	for i := len(parts); i > 0; i-- {
		dir := filepath.Join(root, filepath.Join(parts[:i]...))
		if b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs")); err == nil {
			for _, p := range strings.Fields(string(b)) {
				_ = os.WriteFile(filepath.Join(root, "cgroup.procs"), []byte(p), 0o644)
			}
		}
		for range 50 {
			if err := os.Remove(dir); err == nil || os.IsNotExist(err) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// PodUID is a pod UID of this test process's own (its PID in the last group), for KubepodsCgroup: two test
// binaries that run at once (make test's full and race passes) never make or remove each other's pod
// cgroups. tag (hex, up to 8 digits) tells one test's pod from another's in the same binary.
func PodUID(tag uint32) string {
	return fmt.Sprintf("%08x-7a2e-4c1d-9b3f-%012x", tag, os.Getpid())
}
