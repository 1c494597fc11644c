package kernel

import (
	"bytes"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// CgroupIDs are the IDs (kernfs node IDs, the inode numbers of the cgroups' directories, never reused while
// the machine runs) of a process's cgroups on the unified (v2) hierarchy and of its cpu and memory
// controllers (v1 or v2; 0 for a controller the kernel lacks): what a task pass reads of a process's
// cgroups (taskiter's Description.CgroupKey). The zero value says nothing.
type CgroupIDs [3]uint64

// CgroupPaths remembers the cgroup path IdentityOf gave for processes of each CgroupIDs, so that the
// processes of one cgroup (a node's idle ones are mostly in a few) have /proc/PID/cgroup read once: on
// cgroup v1 that file is a path per hierarchy, 18 µs a process (3,000 sleepers: 55 ms of a measurement's
// start). A path is remembered only when the file it came from names the cgroups of the IDs, by the inode
// numbers of their directories where the hierarchies are mounted: a process moved between the pass that
// read its IDs and the read of its file (runc init joining its container) would otherwise lend its new
// cgroup to the processes it left. Processes of the same unified, cpu and memory cgroups are taken to be in
// the same cgroups of the other hierarchies (a pids cgroup) too, as kubelet and container runtimes make them.
// A cgroup renamed (cgroup v1 allows it within its parent) keeps the path it had when remembered. Where no
// file can be matched (hierarchies mounted from below their root, or a cgroup namespace of tare's own, whose
// paths the mount points do not show), learning stops after maxCgroupMisses tries, so that it costs no more
// than a few stat calls. The zero value is ready; it is not safe for concurrent use.
type CgroupPaths struct {
	hier   []CgroupHierarchy // nil until read; empty when none could be
	paths  map[CgroupIDs]string
	misses int // paths not remembered because the file did not match its IDs
	hits   int // lookups answered
}

// maxCgroupMisses is how many files that do not match their IDs, with none that did, stop the learning.
const maxCgroupMisses = 16

// maxCgroupPaths bounds the paths remembered: past it, the map starts again (cgroups of pods gone stay in
// it until then).
const maxCgroupPaths = 4096

// Lookup returns the path remembered for ids.
func (c *CgroupPaths) Lookup(ids CgroupIDs) (string, bool) {
	if c == nil || ids == (CgroupIDs{}) {
		return "", false
	}
	p, ok := c.paths[ids]
	if ok {
		c.hits++
	}
	return p, ok
}

// Hits is how many lookups were answered.
func (c *CgroupPaths) Hits() int { return c.hits }

// learn remembers path, read from file (a /proc/PID/cgroup under procRoot), for ids, when the file names
// the cgroups of ids (cgroupFileMatches).
func (c *CgroupPaths) learn(procRoot string, ids CgroupIDs, file []byte, path string) {
	if c == nil || ids == (CgroupIDs{}) || path == "" || (c.misses >= maxCgroupMisses && len(c.paths) == 0) {
		return
	}
	if c.hier == nil {
		h, err := ReadCgroupHierarchies(procRoot)
		if err != nil {
			h = []CgroupHierarchy{}
		}
		c.hier = h
	}
	if !cgroupFileMatches(file, c.hier, ids, statIno) {
		c.misses++
		return
	}
	if c.paths == nil || len(c.paths) >= maxCgroupPaths {
		c.paths = map[CgroupIDs]string{}
	}
	c.paths[ids] = path
}

// statIno is the inode number of a directory, 0 when it cannot be stat'ed.
func statIno(dir string) uint64 {
	var st unix.Stat_t
	if unix.Stat(dir, &st) != nil {
		return 0
	}
	return st.Ino
}

// cgroupFileMatches reports whether a /proc/PID/cgroup names the cgroups of ids: its unified cgroup's
// directory, and its cgroups' on the v1 hierarchies of cpu and memory, have the IDs as inode numbers
// (ino), where hier mounts them; at least one is checked, and none differs. A controller on the unified
// hierarchy is not checked: its ID is the nearest cgroup above that enables it, which the file does not say.
func cgroupFileMatches(file []byte, hier []CgroupHierarchy, ids CgroupIDs, ino func(dir string) uint64) bool {
	checked := 0
	for line := range bytes.SplitSeq(bytes.TrimSpace(file), []byte{'\n'}) {
		f := strings.SplitN(string(line), ":", 3)
		if len(f) != 3 {
			return false
		}
		ctl := strings.Split(f[1], ",")
		for _, h := range hier {
			i := -1
			switch {
			case h.V2 && f[0] == "0":
				i = 0
			case !h.V2 && h.Has("cpu") && slices.Contains(ctl, "cpu"):
				i = 1
			case !h.V2 && h.Has("memory") && slices.Contains(ctl, "memory"):
				i = 2
			}
			if i < 0 {
				continue
			}
			got := ino(filepath.Join(h.MountPoint, f[2]))
			if got == 0 {
				continue // not under this mount (a bind mount of part of the hierarchy), or gone
			}
			if got != ids[i] {
				return false
			}
			checked++
			break
		}
	}
	return checked > 0
}
