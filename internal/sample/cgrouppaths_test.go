package sample

import (
	"testing"
	"time"

	"github.com/tare-dev/tare/internal/kernel"
	"github.com/tare-dev/tare/internal/testload"
)

// TestCgroupPathsFromPass: the baseline names each process's cgroup as its own /proc/PID/cgroup does (read
// by kernel.ReadIdentity, which reads the file of each process), though it reads the file once for the
// processes of one cgroup (the task pass's cgroup IDs): five sleepers in two pods' containers, beside the
// node's processes, are named with at least three files fewer. A process moved to another cgroup after the pass that read its IDs (as runc init joins
// its container) is named by its file, and its new cgroup is not lent to the IDs it left.
func TestCgroupPathsFromPass(t *testing.T) { eachTaskPass(t, testCgroupPathsFromPass) }

func testCgroupPathsFromPass(t *testing.T) {
	pods := testload.Sleepers(t, 6)
	for i, pid := range pods[:5] {
		testload.KubepodsCgroup(t, testload.PodUID(0xc60+uint32(i%2)), "c", pid)
	}
	s := newFilteredSampler(t, Options{Interval: time.Second, Detail: time.Second})
	smp, err := s.Sample()
	if err != nil {
		t.Fatal(err)
	}
	checked, remembered, hits := 0, 0, s.cgroups.Hits()
	for _, info := range smp.New {
		if info.Kernel {
			continue
		}
		peer, err := kernel.ReadIdentity(kernel.HostProc, info.Key.PID)
		if err != nil || peer.Stat.Starttime != info.Key.Start {
			continue // ended since
		}
		checked++
		if info.Cgroup != peer.Cgroup {
			t.Errorf("process %d (%s): cgroup %q, its /proc/PID/cgroup says %q", info.Key.PID, info.Comm, info.Cgroup, peer.Cgroup)
		}
		if g, ok := s.act.described(info.Key.PID); ok {
			if p, ok := s.cgroups.Lookup(g.Desc.CgroupKey); ok && p == info.Cgroup {
				remembered++
			}
		}
	}
	t.Logf("%d processes named by their cgroup, %d of them in cgroups whose path is remembered; %d cgroup files not read", checked, remembered, hits)
	// The five sleepers in two pods' cgroups: two files read, three answered by the first of their pod.
	if checked < len(pods) || remembered < len(pods) || hits < 3 {
		t.Errorf("%d processes checked, %d in cgroups whose path is remembered, %d files not read: want the %d sleepers at least, and 3 files not read",
			checked, remembered, hits, len(pods))
	}

	// The sixth sleeper, in the node's cgroups at the baseline's pass, moves to a pod's before it is read
	// (with a reader that has nothing remembered).
	moved := pods[5]
	g, ok := s.act.described(moved)
	if !ok {
		t.Fatalf("process %d has no description", moved)
	}
	testload.KubepodsCgroup(t, testload.PodUID(0xc6f), "c", moved)
	var paths kernel.CgroupPaths
	st, _ := g.ProcStat()
	id, err := kernel.IdentityOf(kernel.HostProc, moved, st, 0, false, &paths, g.Desc.CgroupKey)
	peer, perr := kernel.ReadIdentity(kernel.HostProc, moved)
	if err != nil || perr != nil || id.Cgroup != peer.Cgroup {
		t.Fatalf("moved process: cgroup %q (%v), its /proc/PID/cgroup says %q (%v)", id.Cgroup, err, peer.Cgroup, perr)
	}
	if p, ok := paths.Lookup(g.Desc.CgroupKey); ok {
		t.Errorf("the cgroup IDs the moved process left are remembered as %q", p)
	}
}
