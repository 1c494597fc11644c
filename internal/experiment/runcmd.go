package experiment

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"github.com/tare-dev/tare/internal/kernel"
	"github.com/tare-dev/tare/internal/sample"
)

// runAt is one run command to start: the variant's, beside one lab (replica, from 1, with that lab's
// kubeconfig; empty for the commands target), its output in logPath.
type runAt struct {
	v          Variant
	logPath    string
	kubeconfig string
	replica    int
}

// runSettle is how long a run command must live to count as started: one that exits sooner (a typo, a
// missing program) is an error of the trial, not a quiet variant that measures like the baseline.
const runSettle = 200 * time.Millisecond

// runKillGrace is how long a run command's processes have after SIGTERM before SIGKILL.
const runKillGrace = 2 * time.Second

// startRuns starts the run commands, each in a process group of its own, waits runSettle once for all of
// them, and returns their shells (PID, their process groups', and start time: a PID alone could be
// another process's by the window's end) in order and what stops them all at once: SIGTERM to each group
// and to every process carrying one of the runs' TARE_RUN_ID (those that left the group), SIGKILL
// runKillGrace later for what is left. The shells also die with tare (Pdeathsig) should tare be killed
// before it can stop them; StopLeftoverRuns ends what they started, on --resume. Each command has
// TARE_VARIANT, TARE_REPLICA, TARE_EXPERIMENT (with the experiment's directory, dir), TARE_RUN_ID and,
// with a kubeconfig, KUBECONFIG in its environment. On an error nothing is left running.
func startRuns(ctx context.Context, dir string, runs []runAt) (shells []sample.ProcKey, stop func(), err error) {
	var started []*runProc
	stopAll := func() { stopRuns("/proc", started) }
	for _, r := range runs {
		p, err := launchRun(r, experimentMark(dir))
		if err != nil {
			stopAll()
			return nil, nil, err
		}
		started = append(started, p)
	}
	select {
	case <-time.After(runSettle):
	case <-ctx.Done():
	}
	for _, p := range started {
		select {
		case <-p.exited:
			stopAll()
			b, _ := os.ReadFile(p.r.logPath)
			err := p.err
			if err == nil {
				err = errors.New("it exited at once")
			}
			return nil, nil, fmt.Errorf("variant %s: run %q: %w: %s", p.r.v.Name, p.r.v.Run, err, tail(string(b)))
		default:
		}
	}
	for _, p := range started {
		shells = append(shells, p.key)
	}
	return shells, stopAll, nil
}

// runProc is one started run command.
type runProc struct {
	r      runAt
	id     string // its TARE_RUN_ID
	cmd    *exec.Cmd
	key    sample.ProcKey // the shell's PID and start time (0 when its stat could not be read)
	log    *os.File
	exited chan struct{} // closed when the shell has exited and err is set
	err    error
}

func launchRun(r runAt, experiment string) (*runProc, error) {
	log, err := os.Create(r.logPath)
	if err != nil {
		return nil, fmt.Errorf("variant %s: run: %w", r.v.Name, err)
	}
	id := newRunID()
	cmd := exec.Command("sh", "-c", r.v.Run)
	cmd.Env = append(os.Environ(), "TARE_VARIANT="+r.v.Name, "TARE_REPLICA="+strconv.Itoa(r.replica),
		envExperiment+"="+experiment, envRunID+"="+id)
	if r.kubeconfig != "" {
		cmd.Env = append(cmd.Env, "KUBECONFIG="+r.kubeconfig)
	}
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("variant %s: run %q: %w", r.v.Name, r.v.Run, err)
	}
	p := &runProc{r: r, id: id, cmd: cmd, log: log, exited: make(chan struct{}), key: sample.ProcKey{PID: cmd.Process.Pid}}
	// Read before Wait can reap it: a child's start time is set at fork and kept through exec.
	if st, err := kernel.ReadProcStat("/proc", p.key.PID); err == nil {
		p.key.Start = st.Starttime
	}
	go func() { p.err = cmd.Wait(); close(p.exited) }()
	return p, nil
}

// stopRuns ends the runs: SIGTERM to each run's process group and to the processes that carry its
// TARE_RUN_ID outside it; once every shell has exited and no such process is left, or runKillGrace on,
// SIGKILL for what is left (in the groups too: a process that cleared its environment); it returns when
// the shells are reaped (or a further runKillGrace on).
func stopRuns(procRoot string, ps []*runProc) {
	if len(ps) == 0 {
		return
	}
	ids := make([]string, len(ps))
	for i, p := range ps {
		ids[i] = p.id
	}
	marked := func() []sample.ProcKey {
		var all []sample.ProcKey
		for _, keys := range markedProcesses(procRoot, envRunID, ids) {
			all = append(all, keys...)
		}
		return all
	}
	signalAll := func(sig syscall.Signal) {
		for _, p := range ps {
			_ = syscall.Kill(-p.cmd.Process.Pid, sig) // the group, the shell gone or not
		}
		signalProcesses(procRoot, marked(), sig)
	}
	shellsDone := func() bool {
		for _, p := range ps {
			select {
			case <-p.exited:
			default:
				return false
			}
		}
		return true
	}
	signalAll(syscall.SIGTERM)
	if waitUntil(runKillGrace, func() bool { return shellsDone() && len(marked()) == 0 }) {
		for _, p := range ps { // a process that cleared its environment but stayed in the group
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		}
	} else {
		signalAll(syscall.SIGKILL)
		waitUntil(runKillGrace, shellsDone)
	}
	for _, p := range ps {
		p.log.Close()
	}
}

// waitUntil polls done every 50 ms for up to d and says whether it came true.
func waitUntil(d time.Duration, done func() bool) bool {
	deadline := time.Now().Add(d)
	for !done() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
	return true
}

func tail(s string) string {
	if len(s) > 2000 {
		return s[len(s)-2000:]
	}
	return s
}
