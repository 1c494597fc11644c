package experiment

import (
	"crypto/rand"
	"encoding/hex"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/prometheus/procfs"

	"github.com/tare-dev/tare/internal/kernel"
	"github.com/tare-dev/tare/internal/sample"
)

// A run command's processes are found by their environment: each run command starts with
// TARE_EXPERIMENT (the experiment's directory) and TARE_RUN_ID (one per start) in it, and every process it
// starts inherits both, also one that leaves its process group (setsid, a daemon's double fork) or
// outlives its shell (tare killed: the shell dies by its death signal, its children are re-parented).
const (
	envExperiment = "TARE_EXPERIMENT"
	envRunID      = "TARE_RUN_ID"
)

// newRunID is a run's TARE_RUN_ID: random, so that no other start's processes carry it.
func newRunID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b) // crypto/rand's Read does not fail on Linux
	return hex.EncodeToString(b)
}

// experimentMark is TARE_EXPERIMENT's value for the experiment in dir: its absolute path.
func experimentMark(dir string) string {
	if abs, err := filepath.Abs(dir); err == nil {
		return abs
	}
	return dir
}

// markedProcesses lists the live processes under procRoot, this one aside, whose environment sets name to
// one of values, by value. Processes whose environment cannot be read (another user's, without root;
// gone meanwhile) are not listed.
func markedProcesses(procRoot, name string, values []string) map[string][]sample.ProcKey {
	fs, err := procfs.NewFS(procRoot)
	if err != nil {
		return nil
	}
	procs, err := fs.AllProcs()
	if err != nil {
		return nil
	}
	self := syscall.Getpid()
	out := map[string][]sample.ProcKey{}
	for _, pr := range procs {
		if pr.PID == self {
			continue
		}
		env, err := pr.Environ()
		if err != nil {
			continue
		}
		v, ok := envValue(env, name)
		if !ok || !slices.Contains(values, v) {
			continue
		}
		st, err := kernel.ReadProcStat(procRoot, pr.PID)
		if err != nil || st.State == 'Z' {
			continue
		}
		out[v] = append(out[v], sample.ProcKey{PID: pr.PID, Start: st.Starttime})
	}
	return out
}

// envValue is name's value in an environment (NAME=value entries; the last one wins, as getenv's would
// not be asked to choose).
func envValue(env []string, name string) (string, bool) {
	v, ok := "", false
	for _, e := range env {
		if after, found := strings.CutPrefix(e, name+"="); found {
			v, ok = after, true
		}
	}
	return v, ok
}

// signalProcesses sends sig to each process still the one listed (same PID and start time: a PID reused
// since the listing is another process's) and returns how many it reached.
func signalProcesses(procRoot string, ps []sample.ProcKey, sig syscall.Signal) int {
	n := 0
	for _, p := range ps {
		st, err := kernel.ReadProcStat(procRoot, p.PID)
		if err != nil || st.Starttime != p.Start || st.State == 'Z' {
			continue
		}
		if syscall.Kill(p.PID, sig) == nil {
			n++
		}
	}
	return n
}

// stopLeftoverRuns ends the processes an earlier tare left of this experiment's run commands (tare
// killed while a run command ran: its shell died with tare, what the shell started did not): SIGTERM,
// SIGKILL 2 s on for what is left. It returns the PIDs it found.
func stopLeftoverRuns(procRoot, dir string) []int {
	mark := experimentMark(dir)
	list := func() []sample.ProcKey { return markedProcesses(procRoot, envExperiment, []string{mark})[mark] }
	found := list()
	if len(found) == 0 {
		return nil
	}
	signalProcesses(procRoot, found, syscall.SIGTERM)
	waitUntil(runKillGrace, func() bool { return len(list()) == 0 })
	signalProcesses(procRoot, list(), syscall.SIGKILL)
	pids := make([]int, len(found))
	for i, p := range found {
		pids[i] = p.PID
	}
	return pids
}
