package experiment

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tare-dev/tare/internal/kernel"
	"github.com/tare-dev/tare/internal/lab"
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
const runKillGrace = lab.MarkedKillGrace

// startRuns starts the run commands, each in a process group of its own, waits runSettle once for all of
// them, and returns their shells (PID, their process groups', and start time: a PID alone could be
// another process's by the window's end) in order and what stops them all at once: SIGTERM to each group
// and to every process carrying one of the runs' TARE_RUN_ID (those that left the group), SIGKILL
// runKillGrace later for what is left. The shells also die with tare (Pdeathsig) should tare be killed
// before it can stop them; the experiment's reaper ends what they started. Each command has TARE_VARIANT,
// TARE_REPLICA, TARE_EXPERIMENT (with the experiment's directory, dir), TARE_RUN_ID and, with a
// kubeconfig, KUBECONFIG in its environment. On an error nothing is left running. Calls of stop after the
// first do nothing.
func startRuns(ctx context.Context, dir string, runs []runAt) (shells []sample.ProcKey, stop func(), err error) {
	var started []*runProc
	var once sync.Once
	stopAll := func() { once.Do(func() { stopRuns(ownProc, started) }) } // once: the shells' PIDs are free after
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
			stopAll() // reaps the shell: its status is in p.err
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
	exited chan struct{} // closed when the shell has exited; it stays a zombie until stopRuns reaps it
	err    error         // the shell's exit, once reaped
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
	// Read before the shell can end: a child's start time is set at fork and kept through exec.
	if st, err := kernel.ReadProcStat(ownProc, p.key.PID); err == nil {
		p.key.Start = st.Starttime
	}
	go func() { waitExit(p.key.PID); close(p.exited) }()
	return p, nil
}

// waitExit waits for the child pid to exit without reaping it (WNOWAIT): while it is a zombie its PID,
// and so its process group's ID, cannot be another process's, and signals to the group stay safe.
func waitExit(pid int) {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, unix.EINTR) {
			return
		}
	}
}

// stopRuns ends the runs: SIGTERM to each run's process group and to the processes that carry its
// TARE_RUN_ID outside it (started since the first shell); once every shell has exited and no such process
// is left, SIGKILL to the groups (a process that cleared its environment); after runKillGrace, SIGKILL
// to all that is left, listed again up to three times. Then it reaps the shells.
func stopRuns(procRoot string, ps []*runProc) {
	if len(ps) == 0 {
		return
	}
	ids := make([]string, len(ps))
	var since uint64
	for i, p := range ps {
		ids[i] = p.id
		if since == 0 || p.key.Start < since {
			since = p.key.Start
		}
	}
	marked := func() []lab.ProcRef { return lab.MarkedProcesses(procRoot, envRunID, ids, since) }
	groups := func(sig syscall.Signal) {
		for _, p := range ps {
			_ = syscall.Kill(-p.key.PID, sig) // the shell is not reaped yet: the group's ID is still its
		}
	}
	shellsDone := func() bool {
		for _, p := range ps {
			if !p.hasExited() {
				return false
			}
		}
		return true
	}
	done := func() bool { return shellsDone() && len(marked()) == 0 }
	groups(syscall.SIGTERM)
	lab.SignalProcesses(procRoot, marked(), syscall.SIGTERM)
	if lab.WaitUntil(runKillGrace, done) {
		groups(syscall.SIGKILL)
	} else {
		for range 3 {
			groups(syscall.SIGKILL)
			lab.SignalProcesses(procRoot, marked(), syscall.SIGKILL)
			if lab.WaitUntil(time.Second, done) {
				break
			}
		}
	}
	for _, p := range ps {
		if p.hasExited() {
			p.err = p.cmd.Wait()
		} else {
			go func() { _ = p.cmd.Wait() }() // in an uninterruptible sleep: reaped when it ends
		}
		p.log.Close()
	}
}

// hasExited says whether the shell has exited (it may not be reaped yet).
func (p *runProc) hasExited() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

func tail(s string) string {
	if len(s) > 2000 {
		return s[len(s)-2000:]
	}
	return s
}
