package lab

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/tare-dev/tare/internal/component"
	"github.com/tare-dev/tare/internal/kernel"
)

// The lab's processes: startDaemon starts a component, alive and stopProcess follow and end it by its
// recorded PID and start time, and strayProcesses finds lab programs the state does not name.

// logMarker starts each start's part of a component's log.
const logMarker = "==== tare lab: starting "

// daemon is a component process started by this tare; exited is closed when it ends.
type daemon struct {
	Process
	exited chan struct{}
	err    error
}

// startDaemon starts a component in its own session (so it outlives `tare lab up` and a Ctrl-C at the
// terminal), with stdout and stderr appended to logPath (DIR/logs/NAME.log for node 1 and the control
// plane). With withCaller the component is sent SIGTERM when the process that started it dies (a test that
// panics or times out leaves no daemons).
func startDaemon(dir, logPath, name, bin string, args, env []string, withCaller bool) (*daemon, error) {
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return nil, err
	}
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening the %s log: %w", name, err)
	}
	defer log.Close()
	fmt.Fprintf(log, "%s%s at %s\n", logMarker, name, time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if withCaller {
		cmd.SysProcAttr.Pdeathsig = syscall.SIGTERM
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s (%s): %w", name, bin, err)
	}
	d := &daemon{Process: Process{Name: name, PID: cmd.Process.Pid, Args: append([]string{bin}, args...), Log: logPath}, exited: make(chan struct{})}
	if st, err := kernel.ReadProcStat(procRoot, d.PID); err == nil {
		d.StartTicks = st.Starttime
	}
	go func() { d.err = cmd.Wait(); close(d.exited) }()
	return d, nil
}

// alive says whether the recorded process still runs: same PID, same start time, and not ended
// (kernel.ProcStat.Ended: a killed API server's other threads took seconds under load in CI, and its
// listening sockets close only with the last of them).
func alive(p Process) bool {
	st, err := kernel.ReadProcStat(procRoot, p.PID)
	if err != nil || st.Ended() {
		return false
	}
	return p.StartTicks == 0 || st.Starttime == p.StartTicks
}

// stopProcess sends SIGTERM, waits up to grace, then SIGKILL, and waits for the process to go.
func stopProcess(p Process, grace time.Duration) {
	if !alive(p) {
		return
	}
	_ = syscall.Kill(p.PID, syscall.SIGTERM)
	if waitGone(p, grace) {
		return
	}
	_ = syscall.Kill(p.PID, syscall.SIGKILL)
	waitGone(p, 5*time.Second)
}

func waitGone(p Process, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if !alive(p) {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return !alive(p)
}

// procRoot is where the lab reads processes (kernel's readers take it): the machine's own, as the lab
// starts its processes on this machine.
const procRoot = kernel.HostProc

// labPrograms are the executables a lab runs (and containerd's shims).
var labPrograms = component.LabPrograms(func(e component.Entry) bool { return e.Lab.Daemon })

// strayProcesses finds processes that belong to the lab but are not in its state (a kill -9 of tare
// between starting a component and recording it, or shims): a lab program whose command line names the
// lab directory. Anything else that mentions the directory (a shell, an editor, tare itself) is left alone.
func strayProcesses(dir string) []Process {
	self := os.Getpid()
	var out []Process
	_, _ = kernel.FindCmdline(procRoot, func(pid int, args []string) bool {
		if pid == self || len(args) == 0 || !slices.Contains(labPrograms, filepath.Base(args[0])) {
			return false
		}
		for _, a := range args {
			if a == dir || strings.HasPrefix(a, dir+"/") || strings.Contains(a, "="+dir+"/") {
				st, _ := kernel.ReadProcStat(procRoot, pid)
				out = append(out, Process{Name: filepath.Base(args[0]), PID: pid, StartTicks: st.Starttime, Args: args})
				return true
			}
		}
		return false
	})
	return out
}
