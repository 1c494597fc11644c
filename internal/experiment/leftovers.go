package experiment

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"path/filepath"
	"syscall"
	"time"

	"github.com/tare-dev/tare/internal/kernel"
	"github.com/tare-dev/tare/internal/sample"
)

// A run command's processes are found by their environment: each run command starts with
// TARE_EXPERIMENT (the experiment's directory) and TARE_RUN_ID (one per start) in it, and every process it
// starts inherits both, also one that leaves its process group (setsid, a daemon's double fork) or
// outlives its shell (tare killed: the shell dies by its death signal, its children are re-parented).
// A process that clears its environment, or (tare not root) runs a setuid program, is not found.
const (
	envExperiment = "TARE_EXPERIMENT"
	envRunID      = "TARE_RUN_ID"
)

// ownProc is this process's own /proc: run commands are tare's children, signalled by PID in tare's PID
// namespace, whatever /proc the measurement reads (Runner.Roots).
const ownProc = "/proc"

// newRunID is a run's TARE_RUN_ID: random, so that no other start's processes carry it.
func newRunID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b) // crypto/rand's Read does not fail on Linux
	return hex.EncodeToString(b)
}

// experimentMark is TARE_EXPERIMENT's value for the experiment in dir: its absolute path, symbolic links
// resolved, so that every way of naming the directory marks alike.
func experimentMark(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return dir
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		return real
	}
	return abs
}

// markedProcesses lists the live processes under procRoot that started at or after notBefore (clock ticks
// since boot; 0 for any), this one and kernel threads aside, whose environment sets name to one of values.
// The environment is read with the shared blocking reader's deadline (it takes the process's memory-map
// lock); a process whose environment cannot be read in time or at all (another user's without root) is not
// listed. Each process's start time is read before and after its environment: a PID reused in between is
// not listed.
func markedProcesses(procRoot, name string, values []string, notBefore uint64) []sample.ProcKey {
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
	var out []sample.ProcKey
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
		out = append(out, sample.ProcKey{PID: pid, Start: st.Starttime})
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

// signalProcesses sends sig to each process still the one listed (same PID and start time, not ended: a
// PID reused since the listing is another process's) and returns how many it reached.
func signalProcesses(procRoot string, ps []sample.ProcKey, sig syscall.Signal) int {
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

// endProcesses ends the processes list returns: SIGTERM, then SIGKILL runKillGrace on for what is left,
// listed again (a process may have started another meanwhile) until a listing finds none or three
// rounds of SIGKILL are spent. It returns the processes listed first.
func endProcesses(procRoot string, list func() []sample.ProcKey) []sample.ProcKey {
	found := list()
	if len(found) == 0 {
		return nil
	}
	signalProcesses(procRoot, found, syscall.SIGTERM)
	if waitUntil(runKillGrace, func() bool { return len(list()) == 0 }) {
		return found
	}
	for range 3 {
		left := list()
		if len(left) == 0 {
			break
		}
		signalProcesses(procRoot, left, syscall.SIGKILL)
		waitUntil(time.Second, func() bool { return len(list()) == 0 })
	}
	return found
}

// stopLeftoverRuns ends the processes an earlier tare left of the run commands of the experiment in dir
// (tare killed while a run command ran: its shell died with tare, what the shell started did not) and
// returns their PIDs. The experiment's reaper calls it when tare dies; Run, at its start, for a reaper
// that could not run.
func stopLeftoverRuns(procRoot, dir string) []int {
	mark := []string{experimentMark(dir)}
	found := endProcesses(procRoot, func() []sample.ProcKey { return markedProcesses(procRoot, envExperiment, mark, 0) })
	pids := make([]int, len(found))
	for i, p := range found {
		pids[i] = p.PID
	}
	return pids
}
