package taskiter_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/tare-dev/tare/internal/kernel"
	"github.com/tare-dev/tare/internal/taskiter"
)

// TestDescriptionAgainstProc: every process's description in a pass (taskiter.Group.ProcStat, Desc) is what
// /proc says of it just after: /proc/PID/stat's name, parent, threads and reaped children's times, a state,
// the owner of /proc/PID, and, for a process of one thread, /proc/PID/io's counters. A process of the node
// may exec, reap a child or do I/O in the moment between, so a few may differ (at most 1 in 50, and none
// of those that sleep without ending in both: the pass's own), but none may lack a description.
func TestDescriptionAgainstProc(t *testing.T) { eachPass(t, testDescriptionAgainstProc) }

func testDescriptionAgainstProc(t *testing.T, it *taskiter.Iter) {
	gs := complete(t, it.All)
	checked, differ, withIO := 0, 0, 0
	for _, g := range gs {
		if !g.Desc.Valid {
			t.Errorf("group %d has no description", g.TGID)
			continue
		}
		st, ok := g.ProcStat()
		if ok == g.Kernel {
			t.Errorf("group %d (kernel thread %v): ProcStat %v", g.TGID, g.Kernel, ok)
		}
		if !ok {
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
		var diffs []string
		if st.Comm != peer.Comm || st.PPID != peer.PPID || st.NumThreads != peer.NumThreads {
			diffs = append(diffs, fmt.Sprintf("name %q parent %d threads %d; /proc: %q %d %d", st.Comm, st.PPID, st.NumThreads, peer.Comm, peer.PPID, peer.NumThreads))
		}
		if st.ChildTimeNs() != peer.ChildTimeNs() || g.Desc.EUID != owner.Uid {
			diffs = append(diffs, fmt.Sprintf("children %d+%d ticks owner %d; /proc: %d+%d %d", st.CUTime, st.CSTime, g.Desc.EUID, peer.CUTime, peer.CSTime, owner.Uid))
		}
		if !strings.ContainsRune("RSDTtXZPI", rune(st.State)) {
			diffs = append(diffs, fmt.Sprintf("state %q", st.State)) // the state itself may move between the two
		}
		if g.Desc.HasIO != (peer.NumThreads == 1) {
			diffs = append(diffs, fmt.Sprintf("I/O counters %v with %d threads", g.Desc.HasIO, peer.NumThreads))
		}
		if g.Desc.HasIO {
			withIO++
			read, write, err := kernel.ReadIO(kernel.HostProc, g.TGID)
			ok := err == nil
			if ok && (g.Desc.ReadBytes > read || g.Desc.WriteBytes > write) {
				diffs = append(diffs, fmt.Sprintf("read %d wrote %d; /proc/PID/io after: %d %d", g.Desc.ReadBytes, g.Desc.WriteBytes, read, write))
			} else if ok && peer.Quiet() && st.Quiet() && (g.Desc.ReadBytes != read || g.Desc.WriteBytes != write) {
				diffs = append(diffs, fmt.Sprintf("a sleeper read %d wrote %d; /proc/PID/io: %d %d", g.Desc.ReadBytes, g.Desc.WriteBytes, read, write))
			}
		}
		if len(diffs) > 0 {
			differ++
			t.Logf("process %d (%s): %s", g.TGID, peer.Comm, strings.Join(diffs, "; "))
		}
	}
	t.Logf("%d groups, %d processes checked against /proc (%d with I/O counters), %d differ", len(gs), checked, withIO, differ)
	if checked == 0 || differ > checked/50 {
		t.Errorf("%d of %d processes differ from /proc", differ, checked)
	}
}
