package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// kubepodsCgroup creates a real kubepods/burstable/pod<uid>/<container> cgroup (v1: in the cpu, cpuacct
// and pids hierarchies; v2: in the unified one), the layout kubelet's cgroupfs driver makes, moves pid
// into it, and removes it all when the test ends.
func kubepodsCgroup(t *testing.T, uid, container string, pid int) {
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
		t.Skip("no cgroup hierarchy to create a pod cgroup in")
	}
	for _, root := range roots {
		dir := filepath.Join(root, rel)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Skipf("cannot create cgroups here: %v", err)
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

// TestMeasurePodGroups: a process in a pod's cgroup is grouped by its pod and container.
func TestMeasurePodGroups(t *testing.T) {
	requireTiming(t)
	requireRoot(t)
	uid := "5e1f9c1a-0b7d-4a44-9a63-7f2d9f1d3c10"
	container := strings.Repeat("c0ffee", 10) + "abcd"
	h := startHelper(t, "burn", "100")
	h.line(t, 10*time.Second)
	kubepodsCgroup(t, uid, container, h.pid())
	s := measureJSON(t, "--duration", "2s", "--interval", "500ms")
	p, ok := findProcess(s, h.pid())
	if !ok {
		t.Fatal("burner missing")
	}
	if p.Kind != "pod" || p.PodUID != uid || p.Container != container || p.Group != "pod "+uid {
		t.Errorf("pod process classified as %s/%s pod %q container %q", p.Group, p.Kind, p.PodUID, p.Container)
	}
	for _, g := range s.Groups {
		if g.Name == "pod "+uid {
			if g.CPU.Mean < 90 || g.CPU.Mean > 110 {
				t.Errorf("pod group CPU %.1fm, want ~100m", g.CPU.Mean)
			}
			return
		}
	}
	t.Errorf("no group for the pod: %v", fmt.Sprint(s.GroupNames()))
}
