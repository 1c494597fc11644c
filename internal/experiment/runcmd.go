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
)

// startRun starts a variant's run command in a process group of its own, its output in logPath, and
// returns what stops it: SIGTERM to the group, SIGKILL 2 s later if anything is left. The shell also dies
// with tare (Pdeathsig) should tare be killed before it can stop the group. The command has
// TARE_VARIANT, TARE_REPLICA (which of the labs it runs beside, from 1) and, when kubeconfig is not empty
// (a lab target), KUBECONFIG in its environment. pid is the shell's (its process group's).
func startRun(ctx context.Context, v Variant, logPath, kubeconfig string, replica int) (pid int, stop func(), err error) {
	log, err := os.Create(logPath)
	if err != nil {
		return 0, nil, fmt.Errorf("variant %s: run: %w", v.Name, err)
	}
	cmd := exec.Command("sh", "-c", v.Run)
	cmd.Env = append(os.Environ(), "TARE_VARIANT="+v.Name, "TARE_REPLICA="+strconv.Itoa(replica))
	if kubeconfig != "" {
		cmd.Env = append(cmd.Env, "KUBECONFIG="+kubeconfig)
	}
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		log.Close()
		return 0, nil, fmt.Errorf("variant %s: run %q: %w", v.Name, v.Run, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	// A command that fails at once (a typo, a missing program) is an error of the trial, not a quiet
	// variant that measures like the baseline.
	select {
	case err := <-done:
		log.Close()
		b, _ := os.ReadFile(logPath)
		if err == nil {
			err = errors.New("it exited at once")
		}
		return 0, nil, fmt.Errorf("variant %s: run %q: %w: %s", v.Name, v.Run, err, tail(string(b)))
	case <-time.After(200 * time.Millisecond):
	case <-ctx.Done():
	}
	return cmd.Process.Pid, func() {
		pg := -cmd.Process.Pid
		_ = syscall.Kill(pg, syscall.SIGTERM)
		wait := func() {
			select {
			case err := <-done:
				_ = err // killed: the exit status says only that
				done <- nil
			case <-time.After(2 * time.Second):
			}
		}
		wait()
		_ = syscall.Kill(pg, syscall.SIGKILL) // what the group left behind, the shell gone or not
		wait()
		log.Close()
	}, nil
}

func tail(s string) string {
	if len(s) > 2000 {
		return s[len(s)-2000:]
	}
	return s
}
