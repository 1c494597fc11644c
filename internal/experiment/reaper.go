package experiment

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tare-dev/tare/internal/lab"
)

// An experiment's reaper is a child process of tare that cleans up after tare when tare dies without
// doing so itself (SIGKILL, the OOM killer, a crash, a second Ctrl-C): it stops the experiment's labs
// with lab down (thawing a paused one, removing a node's pods and network, as tare would have) and the
// processes its run commands left. It learns of tare's death by its stdin: a pipe whose write end only
// tare holds reaches end of file when tare ends; tare writes "done" first when it has cleaned up itself.
// The components' own death signal (lab.UpOptions.StopWithCaller) ends the processes either way; the
// reaper does what a signal cannot (a frozen lab, pods, network, processes outside the lab).
//
// The reaper is tare's own binary started with reaperEnv set; cli.Execute calls Reap first thing, and the
// TestMain of a test binary that runs experiments sends such a process there too. It holds DIR/reaper.lock
// for its life, so that a new tare on the same experiment (--resume) waits until the last one's labs are
// down.

const reaperEnv = "TARE_EXPERIMENT_REAPER"

// reaperReady says this binary has called Reap (not as a reaper), and so would serve as one: a test binary
// that does not route reapers started by it to Reap would run its tests instead.
var reaperReady atomic.Bool

// reaperJob is what a reaper cleans: the experiment's directory and its labs' directories.
type reaperJob struct {
	Experiment string   `json:"experiment"`
	Labs       []string `json:"labs"`
}

// ReaperAsked says this process was started as an experiment's reaper.
func ReaperAsked() bool { return os.Getenv(reaperEnv) != "" }

// Reap runs this process as an experiment's reaper when tare started it as one (asked), reading tare's
// word on in, saying it is ready on ready and logging what it did on log, and returns its exit status;
// otherwise it returns at once. cli.Execute calls it before anything else.
func Reap(in io.Reader, ready, log io.Writer) (code int, asked bool) {
	if !ReaperAsked() {
		reaperReady.Store(true)
		return 0, false
	}
	return reap(os.Getenv(reaperEnv), in, ready, log), true
}

// reap is the reaper's life: lock, say ready, wait for tare's word or its end, and clean up after the end.
func reap(jobJSON string, in io.Reader, ready, log io.Writer) int {
	signal.Ignore(syscall.SIGINT, syscall.SIGHUP) // the terminal's Ctrl-C is tare's to handle
	var job reaperJob
	if err := json.Unmarshal([]byte(jobJSON), &job); err != nil || job.Experiment == "" {
		fmt.Fprintf(log, "tare reaper: bad job %q: %v\n", jobJSON, err)
		return 2
	}
	unlock, err := lockReaper(job.Experiment)
	if err != nil {
		fmt.Fprintf(log, "tare reaper: %v\n", err)
		return 1
	}
	defer unlock()
	fmt.Fprintln(ready, "ready")
	b, _ := io.ReadAll(in) // until tare closes the pipe or ends
	if strings.TrimSpace(string(b)) == "done" {
		return 0
	}
	fmt.Fprintf(log, "%s tare ended without cleaning up: stopping its run commands' processes and its labs\n", time.Now().Format(time.RFC3339))
	if pids := stopLeftoverRuns("/proc", job.Experiment); len(pids) > 0 {
		fmt.Fprintf(log, "stopped run command processes %v\n", pids)
	}
	failed := 0
	for _, dir := range job.Labs {
		rep, err := lab.Down(context.Background(), dir, true)
		switch {
		case errors.Is(err, lab.ErrNotRunning):
		case err != nil:
			failed++
			fmt.Fprintf(log, "lab %s: %v\n", dir, err)
		default:
			fmt.Fprintf(log, "lab %s: stopped %d processes (%d strays)%s\n", dir, len(rep.Stopped), len(rep.Strays), map[bool]string{true: ", thawed first"}[rep.WasPaused])
		}
	}
	if failed > 0 {
		return 1
	}
	return 0
}

// lockReaper takes DIR/reaper.lock (flock, exclusive): it waits for the reaper of an earlier tare on the
// experiment to finish.
func lockReaper(dir string) (unlock func(), err error) {
	f, err := os.OpenFile(filepath.Join(dir, "reaper.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("reaper lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("reaper lock %s: %w", f.Name(), err)
	}
	return func() { f.Close() }, nil
}

// reaper is a started reaper, to be released when tare has cleaned up itself.
type reaper struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	log   *os.File
}

// startReaper starts the reaper of the experiment in dir with its labs and waits until it holds the
// experiment's lock (after an earlier tare's reaper has finished; say is told when that takes a while).
// It returns nil, nil in a binary that cannot be a reaper (Reap not called: a test binary that does not
// route a reaper to it).
func startReaper(ctx context.Context, dir string, labs []string, say func(string, ...any)) (*reaper, error) {
	if !reaperReady.Load() {
		return nil, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("reaper: %w", err)
	}
	job, _ := json.Marshal(reaperJob{Experiment: experimentMark(dir), Labs: labs})
	log, err := os.OpenFile(filepath.Join(dir, "reaper.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("reaper: %w", err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), reaperEnv+"="+string(job))
	cmd.Stderr = log
	// Its own process group: a Ctrl-C at the terminal reaches tare, which cleans up and releases it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		log.Close()
		return nil, fmt.Errorf("reaper: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		log.Close()
		return nil, fmt.Errorf("reaper: %w", err)
	}
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("reaper: %w", err)
	}
	r := &reaper{cmd: cmd, stdin: stdin, log: log}
	readyc := make(chan error, 1)
	go func() {
		line, err := bufio.NewReader(stdout).ReadString('\n')
		if err == nil && strings.TrimSpace(line) != "ready" {
			err = fmt.Errorf("said %q", line)
		}
		readyc <- err
	}()
	waiting := time.NewTimer(time.Second)
	defer waiting.Stop()
	for {
		select {
		case err := <-readyc:
			if err != nil {
				r.release()
				return nil, fmt.Errorf("reaper did not start (see %s): %w", log.Name(), err)
			}
			return r, nil
		case <-waiting.C:
			say("waiting for the reaper of an earlier tare on this experiment to stop its labs (%s)", filepath.Join(dir, "reaper.lock"))
		case <-ctx.Done():
			r.release()
			return nil, ctx.Err()
		}
	}
}

// release tells the reaper tare has cleaned up and waits for it to exit.
func (r *reaper) release() {
	if r == nil {
		return
	}
	_, _ = io.WriteString(r.stdin, "done\n")
	_ = r.stdin.Close()
	done := make(chan struct{})
	go func() { _ = r.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second): // waiting for an earlier reaper's lock: it has nothing to do now
		_ = r.cmd.Process.Kill()
		<-done
	}
	r.log.Close()
}
