package experiment

import (
	"crypto/rand"
	"encoding/hex"
	"path/filepath"

	"github.com/tare-dev/tare/internal/kernel"
	"github.com/tare-dev/tare/internal/lab"
)

// A run command's processes are found by their environment (lab.MarkedProcesses): each run command
// starts with TARE_EXPERIMENT (the experiment's directory) and TARE_RUN_ID (one per start) in it, and
// every process it starts inherits both.
const (
	envExperiment = "TARE_EXPERIMENT"
	envRunID      = "TARE_RUN_ID"
)

// ownProc is this process's own /proc: run commands are tare's children, signalled by PID in tare's PID
// namespace, whatever /proc the measurement reads (Runner.Roots).
const ownProc = kernel.HostProc

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

// stopLeftoverRuns ends the processes an earlier tare left of the run commands of the experiment in dir
// (tare killed while a run command ran: its shell died with tare, what the shell started did not) and
// returns their PIDs. The experiment's reaper does the same when tare dies; Run calls it at its start,
// for a reaper that could not run.
func stopLeftoverRuns(procRoot, dir string) []int {
	return lab.EndMarked(procRoot, envExperiment, experimentMark(dir))
}

// reaperJob is the reaper's job for the experiment in dir and its labs: the labs, and the processes of
// its run commands.
func reaperJob(dir string, labs []string) lab.ReaperJob {
	return lab.ReaperJob{Lock: dir, Labs: labs, Mark: &lab.EnvMark{Name: envExperiment, Value: experimentMark(dir)}}
}
