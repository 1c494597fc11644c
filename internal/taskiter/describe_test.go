package taskiter_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/tare-dev/tare/internal/kernel"
	"github.com/tare-dev/tare/internal/taskiter"
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
