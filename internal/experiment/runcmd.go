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

// startRuns starts the run commands, each in a process group of its own, waits runSettle once for all of
// them, and returns their shells (PID, their process groups', and start time: a PID alone could be
// another process's by the window's end) in order and what stops them all at once:
// SIGTERM to each group, SIGKILL 2 s later if anything is left. The shells also die with tare
// (Pdeathsig) should tare be killed before it can stop the groups. Each command has TARE_VARIANT,
// TARE_REPLICA and, with a kubeconfig, KUBECONFIG in its environment. On an error nothing is left
// running.
func startRuns(ctx context.Context, runs []runAt) (shells []sample.ProcKey, stop func(), err error) {
	var started []*runProc
	stopAll := func() {
		var wg sync.WaitGroup
		for _, p := range started {
			wg.Add(1)
			go func() { defer wg.Done(); p.stop() }()
		}
		wg.Wait()
	}
	for _, r := range runs {
		p, err := launchRun(r)
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
		case err := <-p.done:
			p.done <- err // stop reads it again
			stopAll()
			b, _ := os.ReadFile(p.r.logPath)
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
	r    runAt
	cmd  *exec.Cmd
	key  sample.ProcKey // the shell's PID and start time (0 when its stat could not be read)
	log  *os.File
	done chan error // the shell's exit, once
}

func launchRun(r runAt) (*runProc, error) {
	log, err := os.Create(r.logPath)
	if err != nil {
		return nil, fmt.Errorf("variant %s: run: %w", r.v.Name, err)
	}
	cmd := exec.Command("sh", "-c", r.v.Run)
	cmd.Env = append(os.Environ(), "TARE_VARIANT="+r.v.Name, "TARE_REPLICA="+strconv.Itoa(r.replica))
	if r.kubeconfig != "" {
		cmd.Env = append(cmd.Env, "KUBECONFIG="+r.kubeconfig)
	}
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("variant %s: run %q: %w", r.v.Name, r.v.Run, err)
	}
	p := &runProc{r: r, cmd: cmd, log: log, done: make(chan error, 1), key: sample.ProcKey{PID: cmd.Process.Pid}}
	// Read before Wait can reap it: a child's start time is set at fork and kept through exec.
	if st, err := kernel.ReadProcStat("/proc", p.key.PID); err == nil {
		p.key.Start = st.Starttime
	}
	go func() { p.done <- cmd.Wait() }()
	return p, nil
}

// stop ends the command's process group: SIGTERM, and SIGKILL for what is left 2 s later.
func (p *runProc) stop() {
	pg := -p.cmd.Process.Pid
	_ = syscall.Kill(pg, syscall.SIGTERM)
	wait := func() {
		select {
		case err := <-p.done:
			_ = err // killed: the exit status says only that
			p.done <- nil
		case <-time.After(2 * time.Second):
		}
	}
	wait()
	_ = syscall.Kill(pg, syscall.SIGKILL) // what the group left behind, the shell gone or not
	wait()
	p.log.Close()
}

func tail(s string) string {
	if len(s) > 2000 {
		return s[len(s)-2000:]
	}
	return s
}
