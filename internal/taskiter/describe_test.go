package taskiter_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/tare-dev/tare/internal/kernel"
	"github.com/tare-dev/tare/internal/taskiter"
	"github.com/tare-dev/tare/internal/testload"
)

// TestDescriptionAgainstProc: every process's description in a pass (taskiter.Group.ProcStat, Desc) is what
// /proc says of it just after: /proc/PID/stat's name, parent, threads and reaped children's times, a state,
// the owner of /proc/PID, and, for a process of one thread, /proc/PID/io's counters (no more than /proc
// says after, and as much for a sleeper). A process of the node may exec, reap a child or do I/O in the
// moment between, so the check runs twice, and a process that differs both times fails it. Every group has a description but bpf-iter's open ones (threads
// born or ended during the walk: Inexact, completed by user space). This test process, whose threads come
// and go, is left out.
func TestDescriptionAgainstProc(t *testing.T) { eachPass(t, testDescriptionAgainstProc) }

func testDescriptionAgainstProc(t *testing.T, it *taskiter.Iter) {
	first, checked := describedDiffs(t, it)
	again, _ := describedDiffs(t, it)
	persist := 0
	for pid, d := range again {
		if prev, ok := first[pid]; ok {
			persist++
			t.Errorf("process %d differs from /proc twice: %s; then %s", pid, prev, d)
		}
	}
	t.Logf("%d processes checked against /proc; %d differed in the first round, %d in the second, %d in both", checked, len(first), len(again), persist)
	if checked == 0 {
		t.Errorf("no process checked")
	}
}

// describedDiffs runs a pass and compares each process's description with /proc: the processes that
// differ, with how, and how many were compared.
func describedDiffs(t *testing.T, it *taskiter.Iter) (map[int]string, int) {
	gs := complete(t, it.All)
	diffs := map[int]string{}
	checked := 0
	for _, g := range gs {
		if !g.Desc.Valid {
			if !g.Inexact {
				t.Errorf("group %d has no description", g.TGID)
			}
			continue
		}
		st, ok := g.ProcStat()
		if ok == g.Kernel {
			t.Errorf("group %d (kernel thread %v): ProcStat %v", g.TGID, g.Kernel, ok)
		}
		if !ok || g.TGID == os.Getpid() {
			continue
		}
		peer, err := kernel.ReadProcStat(kernel.HostProc, g.TGID)
		if err != nil || peer.Starttime != st.Starttime {
			continue // ended since, or its PID reused
		}
		var owner syscall.Stat_t
		if syscall.Stat(filepath.Join(kernel.HostProc, fmt.Sprint(g.TGID)), &owner) != nil {
			continue
		}
		checked++
		var d []string
		if st.Comm != peer.Comm || st.PPID != peer.PPID || st.NumThreads != peer.NumThreads {
			d = append(d, fmt.Sprintf("name %q parent %d threads %d; /proc: %q %d %d", st.Comm, st.PPID, st.NumThreads, peer.Comm, peer.PPID, peer.NumThreads))
		}
		if st.CUTime != peer.CUTime || st.CSTime != peer.CSTime || g.Desc.EUID != owner.Uid {
			d = append(d, fmt.Sprintf("children %d+%d ticks owner %d; /proc: %d+%d %d", st.CUTime, st.CSTime, g.Desc.EUID, peer.CUTime, peer.CSTime, owner.Uid))
		}
		if !strings.ContainsRune("RSDTtXZPI", rune(st.State)) {
			d = append(d, fmt.Sprintf("state %q", st.State)) // the state itself may move between the two
		}
		if g.Desc.HasIO != (peer.NumThreads == 1) {
			d = append(d, fmt.Sprintf("I/O counters %v with %d threads", g.Desc.HasIO, peer.NumThreads))
		}
		if read, write, err := kernel.ReadIO(kernel.HostProc, g.TGID); g.Desc.HasIO && err == nil {
			if g.Desc.ReadBytes > read || g.Desc.WriteBytes > write {
				d = append(d, fmt.Sprintf("read %d wrote %d; /proc/PID/io after: %d %d", g.Desc.ReadBytes, g.Desc.WriteBytes, read, write))
			} else if peer.Quiet() && st.Quiet() && (g.Desc.ReadBytes != read || g.Desc.WriteBytes != write) {
				d = append(d, fmt.Sprintf("a sleeper read %d wrote %d; /proc/PID/io: %d %d", g.Desc.ReadBytes, g.Desc.WriteBytes, read, write))
			}
		}
		if len(d) > 0 {
			diffs[g.TGID] = peer.Comm + ": " + strings.Join(d, "; ")
		}
	}
	return diffs, checked
}

// TestCgroupKeyAgainstProc: each described process's cgroup key (Desc.CgroupKey) against /proc/PID/cgroup
// and the cgroup file systems, which the pass does not read: the directory of its unified (v2) cgroup, and
// of its cgroups on v1 hierarchies of the cpu and memory controllers, has the key's ID as its inode number
// (a cgroup's kernfs node ID is its inode number); processes of one key have the same /proc/PID/cgroup
// (what tare reads once for all of them); processes whose unified, cpu or memory cgroups differ have
// different keys. A process may move cgroups in the moment between, so the check runs twice, and a process
// that differs both times fails it. Zombies are left out: their file names the root of every v1 hierarchy
// (proc_cgroup_show), while their cgroups stay theirs.
func TestCgroupKeyAgainstProc(t *testing.T) { eachPass(t, testCgroupKeyAgainstProc) }

func testCgroupKeyAgainstProc(t *testing.T, it *taskiter.Iter) {
	hier, err := kernel.ReadCgroupHierarchies(kernel.HostProc)
	if err != nil {
		t.Fatal(err)
	}
	// Two sleepers in one pod's container cgroup, a third in another pod's.
	s := testload.Sleepers(t, 3)
	testload.KubepodsCgroup(t, testload.PodUID(0xc61), "c", s[0])
	testload.KubepodsCgroup(t, testload.PodUID(0xc61), "c", s[1])
	testload.KubepodsCgroup(t, testload.PodUID(0xc62), "c", s[2])
	first, checked, inodes, keys := cgroupKeyDiffs(t, it, hier)
	again, _, _, _ := cgroupKeyDiffs(t, it, hier)
	if keys[s[0]] != keys[s[1]] || keys[s[0]] == keys[s[2]] || keys[s[0]] == (kernel.CgroupIDs{}) {
		t.Errorf("keys %v and %v of one pod's sleepers, %v of another's: want the first two equal, the third apart", keys[s[0]], keys[s[1]], keys[s[2]])
	}
	for pid, d := range again {
		if prev, ok := first[pid]; ok {
			t.Errorf("process %d differs from /proc twice: %s; then %s", pid, prev, d)
		}
	}
	t.Logf("%d processes checked against /proc/PID/cgroup and %d cgroups' inode numbers (%d hierarchies), %d keys; %d differed in the first round, %d in the second",
		checked, inodes, len(hier), len(distinct(keys)), len(first), len(again))
	if checked == 0 || inodes < checked {
		t.Errorf("%d processes checked, %d inode numbers: want some, and their unified cgroup's at least", checked, inodes)
	}
}

// cgroupKeyDiffs runs a pass and compares each described process's cgroup key with /proc/PID/cgroup and
// the inode numbers of its cgroups' directories: the processes that differ, with how, how many were
// compared, how many of their cgroups' inode numbers, and each one's key.
func cgroupKeyDiffs(t *testing.T, it *taskiter.Iter, hier []kernel.CgroupHierarchy) (diffs map[int]string, checked, inodes int, keys map[int]kernel.CgroupIDs) {
	gs := complete(t, it.All)
	diffs, keys = map[int]string{}, map[int]kernel.CgroupIDs{}
	files := map[kernel.CgroupIDs]string{} // a key's /proc/PID/cgroup, as its first process has it
	byFile := map[string]kernel.CgroupIDs{}
	for _, g := range gs {
		if !g.Desc.Valid || g.Kernel || g.Desc.State == 'Z' || g.Desc.State == 'X' {
			continue // a zombie's file names the root of every v1 hierarchy, whatever its cgroups were
		}
		b, err := os.ReadFile(filepath.Join(kernel.HostProc, fmt.Sprint(g.TGID), "cgroup"))
		if err != nil {
			continue // ended since
		}
		if peer, err := kernel.ReadProcStat(kernel.HostProc, g.TGID); err != nil || peer.Starttime != g.StartNs/1e7 {
			continue // its PID reused
		}
		checked++
		key, file := g.Desc.CgroupKey, string(b)
		keys[g.TGID] = key
		var d []string
		for _, want := range cgroupInodes(file, hier) {
			inodes++
			if key[want.i] != want.ino {
				d = append(d, fmt.Sprintf("key %v: the %s cgroup %s is inode %d", key, want.name, want.path, want.ino))
			}
		}
		if f, ok := files[key]; ok && f != file {
			d = append(d, fmt.Sprintf("key %v, also another process's with /proc/PID/cgroup %q: this one's is %q", key, f, file))
		} else if !ok {
			files[key] = file
		}
		if k, ok := byFile[file]; ok && k != key {
			d = append(d, fmt.Sprintf("key %v, another process of the same /proc/PID/cgroup has %v", key, k))
		} else if !ok {
			byFile[file] = key
		}
		if len(d) > 0 {
			diffs[g.TGID] = strings.Join(d, "; ")
		}
	}
	return diffs, checked, inodes, keys
}

type cgroupInode struct {
	i          int // in the key
	name, path string
	ino        uint64
}

// cgroupInodes are the inode numbers of a /proc/PID/cgroup's unified cgroup and of its cgroups on the v1
// hierarchies of cpu and memory, as the mounted cgroup file systems show them, with the key's index each
// should be. A controller on the unified hierarchy is left out: its state is that of the nearest cgroup
// above that enables it, which the file does not say.
func cgroupInodes(file string, hier []kernel.CgroupHierarchy) []cgroupInode {
	var out []cgroupInode
	for line := range strings.SplitSeq(strings.TrimSpace(file), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		for _, h := range hier {
			var c cgroupInode
			switch {
			case h.V2 && f[0] == "0":
				c = cgroupInode{i: 0, name: "unified"}
			case !h.V2 && h.Has("cpu") && slices.Contains(strings.Split(f[1], ","), "cpu"):
				c = cgroupInode{i: 1, name: "cpu"}
			case !h.V2 && h.Has("memory") && slices.Contains(strings.Split(f[1], ","), "memory"):
				c = cgroupInode{i: 2, name: "memory"}
			default:
				continue
			}
			var st syscall.Stat_t
			if syscall.Stat(filepath.Join(h.MountPoint, f[2]), &st) != nil {
				continue // not under this mount (a bind mount of part of it), or gone
			}
			c.path, c.ino = f[2], st.Ino
			out = append(out, c)
			break
		}
	}
	return out
}

func distinct(keys map[int]kernel.CgroupIDs) map[kernel.CgroupIDs]bool {
	out := map[kernel.CgroupIDs]bool{}
	for _, k := range keys {
		out[k] = true
	}
	return out
}
