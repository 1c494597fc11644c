package lab

import (
	"bytes"
	"syscall"
	"time"

	"github.com/tare-dev/tare/internal/kernel"
)

// Processes outside a lab's own daemons are found by their environment: tare starts them with a mark
// (an experiment's run commands carry TARE_EXPERIMENT and TARE_RUN_ID), and every process they start
// inherits it, also one that leaves its process group (setsid, a daemon's double fork) or outlives its
// shell (tare killed: the shell dies by its death signal, its children are re-parented). A process that
// clears its environment, or (tare not root) runs a setuid program, is not found.

// ProcRef is a process by PID and start time (clock ticks since boot): a PID reused since is another.
type ProcRef struct {
	PID   int
	Start uint64
}

// MarkedKillGrace is how long the processes EndMarked sends SIGTERM have before SIGKILL.
const MarkedKillGrace = 2 * time.Second

// MarkedProcesses lists the live processes under procRoot that started at or after notBefore (clock ticks
// since boot; 0 for any), this one and kernel threads aside, whose environment sets name to one of values.
// The environment is read with the shared blocking reader's deadline (it takes the process's memory-map
// lock); a process whose environment cannot be read in time or at all (another user's without root) is not
// listed. Each process's start time is read before and after its environment: a PID reused in between is
// not listed.
func MarkedProcesses(procRoot, name string, values []string, notBefore uint64) []ProcRef {
	pids, err := kernel.ListPIDs(procRoot)
	if err != nil {
		return nil
	}
	want := make([][]byte, len(values))
	for i, v := range values {
		want[i] = []byte(name + "=" + v)
	}
	reader := kernel.BlockingReads(procRoot)
	self := syscall.Getpid()
	var out []ProcRef
	for _, pid := range pids {
		st, err := kernel.ReadProcStat(procRoot, pid)
		if err != nil || pid == self || st.KernelThread() || st.Ended() || st.Starttime < notBefore {
			continue
		}
		env, err := reader.Read(pid, st.Comm, "environ")
		if err != nil || !environHas(env, want) {
			continue
		}
		if again, err := kernel.ReadProcStat(procRoot, pid); err != nil || again.Starttime != st.Starttime {
			continue
		}
		out = append(out, ProcRef{PID: pid, Start: st.Starttime})
	}
	return out
}

// environHas says whether an environment (/proc/PID/environ: NAME=value entries, each ended by a NUL)
// holds one of the entries.
func environHas(environ []byte, entries [][]byte) bool {
	for e := range bytes.SplitSeq(environ, []byte{0}) {
		for _, w := range entries {
			if bytes.Equal(e, w) {
				return true
			}
		}
	}
	return false
}

// SignalProcesses sends sig to each process still the one listed (same PID and start time, not ended: a
// PID reused since the listing is another process's) and returns how many it reached.
func SignalProcesses(procRoot string, ps []ProcRef, sig syscall.Signal) int {
	n := 0
	for _, p := range ps {
		st, err := kernel.ReadProcStat(procRoot, p.PID)
		if err != nil || st.Starttime != p.Start || st.Ended() {
			continue
		}
		if syscall.Kill(p.PID, sig) == nil {
			n++
		}
	}
	return n
}

// WaitUntil polls done every 50 ms for up to d and says whether it came true.
func WaitUntil(d time.Duration, done func() bool) bool {
	deadline := time.Now().Add(d)
	for !done() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
	return true
}

// EndMarked ends the processes whose environment sets name to value: SIGTERM, then SIGKILL
// MarkedKillGrace on for what is left, listed again (a process may have started another meanwhile) until
// a listing finds none or three rounds of SIGKILL are spent. It returns the PIDs listed first.
func EndMarked(procRoot, name, value string) []int {
	list := func() []ProcRef { return MarkedProcesses(procRoot, name, []string{value}, 0) }
	found := list()
	if len(found) == 0 {
		return nil
	}
	SignalProcesses(procRoot, found, syscall.SIGTERM)
	if !WaitUntil(MarkedKillGrace, func() bool { return len(list()) == 0 }) {
		for range 3 {
			left := list()
			if len(left) == 0 {
				break
			}
			SignalProcesses(procRoot, left, syscall.SIGKILL)
			WaitUntil(time.Second, func() bool { return len(list()) == 0 })
		}
	}
	pids := make([]int, len(found))
	for i, p := range found {
		pids[i] = p.PID
	}
	return pids
}
