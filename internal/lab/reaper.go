package lab

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
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tare-dev/tare/internal/kernel"
)

// A reaper is a child process of tare that cleans up after tare when tare dies without doing so itself
// (SIGKILL, the OOM killer, a crash, a second Ctrl-C, a test binary's timeout): it stops the labs it was
// given with Down (thawing a paused one, removing a node's pods and network, as tare would have) and the
// processes that carry its job's environment mark (an experiment's run commands). It learns of tare's
// death by its stdin: a pipe whose write end only tare holds (close-on-exec: no other child inherits it)
// reaches end of file when tare ends. Tare writes "lab DIR" for each lab it starts later (Watch), and
// "done" when it has cleaned up itself (Release). The components' own death signal
// (UpOptions.StopWithCaller) ends the processes either way; the reaper does what a signal cannot (a
// frozen lab, pods, network, processes outside the lab). A kill of tare's whole cgroup (systemd stopping
// a unit) kills the reaper too.
//
// The reaper is tare's own binary started with reaperEnv set; cli.Execute calls Reap first thing, and the
// TestMain of a test binary that starts labs or experiments sends such a process there too. It holds
// LOCK/reaper.lock for its life, so that a new tare on the same experiment (--resume) waits until the
// last one's labs are down.
//
// Labs that tare lab up starts are meant to outlive tare and have no reaper; an experiment's labs and
// the labs of tests (labtest.TempDir) do.

const reaperEnv = "TARE_LAB_REAPER"

// reaperReady says this binary has called Reap (not as a reaper), and so would serve as one.
var reaperReady atomic.Bool

// reaperStartTimeout bounds the wait for a started reaper's first word: a binary that does not route
// reapers to Reap (a test binary) says nothing.
const reaperStartTimeout = 10 * time.Second

// EnvMark names the processes a reaper ends besides the labs: those whose environment sets Name to Value
// (and every process they start inherits it).
type EnvMark struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// ReaperJob is what a reaper cleans: the labs in Labs (more can be added with Watch) and the processes
// Mark names; it holds Lock/reaper.lock.
type ReaperJob struct {
	Lock string   `json:"lock"`
	Labs []string `json:"labs,omitempty"`
	Mark *EnvMark `json:"mark,omitempty"`
	// What names the caller in the reaper's log ("tare", "the test binary").
	What string `json:"what,omitempty"`
	// RemoveLock has the reaper remove the Lock directory when it ends, unless a lab could not be
	// stopped (its log, in that directory, says why): a directory made for the reaper alone.
	RemoveLock bool `json:"remove_lock,omitempty"`
	// RemoveLabs has the reaper remove each lab's directory once it has stopped it: temporary labs (a test
	// binary's) that nothing reads after.
	RemoveLabs bool `json:"remove_labs,omitempty"`
}

// ReaperAsked says this process was started as a reaper.
func ReaperAsked() bool { return os.Getenv(reaperEnv) != "" }

// Reap runs this process as a reaper when tare started it as one (asked), reading tare's word on in,
// saying it has started and is ready on out and logging what it did on log, and returns its exit status;
// otherwise it returns at once. cli.Execute calls it before anything else.
func Reap(in io.Reader, out, log io.Writer) (code int, asked bool) {
	if !ReaperAsked() {
		reaperReady.Store(true)
		return 0, false
	}
	job := os.Getenv(reaperEnv)
	_ = os.Unsetenv(reaperEnv) // not for the programs lab down runs
	return reap(job, in, out, log), true
}

// reap is the reaper's life: say it started, lock, say ready, follow tare's words until "done" or its
// end, and clean up after the end.
func reap(jobJSON string, in io.Reader, out, log io.Writer) int {
	// Tare handles the terminal's Ctrl-C and a SIGTERM and then releases the reaper; cleaning up must not
	// stop half-way either. SIGPIPE: a write to tare's end of out after tare died.
	signal.Ignore(syscall.SIGINT, syscall.SIGHUP, syscall.SIGTERM, syscall.SIGPIPE)
	fmt.Fprintln(out, "started")
	var job ReaperJob
	if err := json.Unmarshal([]byte(jobJSON), &job); err != nil || job.Lock == "" {
		fmt.Fprintf(log, "tare reaper: bad job %q: %v\n", jobJSON, err)
		return 2
	}
	unlock, err := lockReaper(job.Lock)
	if err != nil {
		fmt.Fprintf(log, "tare reaper: %v\n", err)
		return 1
	}
	defer unlock()
	failed := 0
	if job.RemoveLock {
		defer func() {
			if failed == 0 {
				_ = os.RemoveAll(job.Lock)
			}
		}()
	}
	fmt.Fprintln(out, "ready")
	labs := job.Labs
	sc := bufio.NewScanner(in)
	for sc.Scan() { // until tare says done, closes the pipe or ends
		line := strings.TrimSpace(sc.Text())
		if line == "done" {
			return 0
		}
		if dir, ok := strings.CutPrefix(line, "lab "); ok && dir != "" {
			labs = append(labs, dir)
		}
	}
	what := job.What
	if what == "" {
		what = "tare"
	}
	fmt.Fprintf(log, "%s %s ended without cleaning up: stopping its processes and its labs\n", time.Now().Format(time.RFC3339), what)
	if job.Mark != nil {
		if pids := EndMarked(ownProc, job.Mark.Name, job.Mark.Value); len(pids) > 0 {
			fmt.Fprintf(log, "stopped run command processes %v\n", pids)
		}
	}
	for _, dir := range labs {
		rep, err := Down(context.Background(), dir, true)
		switch {
		case errors.Is(err, ErrNotRunning):
		case err != nil:
			failed++
			fmt.Fprintf(log, "lab %s: %v\n", dir, err)
			continue // its directory holds the state and logs that say what is left
		default:
			thawed := ""
			if rep.WasPaused {
				thawed = ", thawed first"
			}
			fmt.Fprintf(log, "lab %s: stopped %d processes (%d strays)%s\n", dir, len(rep.Stopped), len(rep.Strays), thawed)
		}
		if job.RemoveLabs {
			if err := os.RemoveAll(dir); err != nil {
				fmt.Fprintf(log, "lab %s: %v\n", dir, err)
			}
		}
	}
	fmt.Fprintf(log, "%s done\n", time.Now().Format(time.RFC3339))
	if failed > 0 {
		return 1
	}
	return 0
}

// ownProc is this process's own /proc: the processes a reaper ends are tare's children's, signalled by
// PID in tare's PID namespace.
const ownProc = kernel.HostProc

// lockReaper takes DIR/reaper.lock (flock, exclusive): it waits for the reaper of an earlier tare on the
// same directory to finish.
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

// AwaitReaperLock waits, until ctx ends, for dir's reaper lock to be free (another tare on the
// experiment, or an earlier tare's reaper, holds it), saying so after a second; tare calls it when its own
// reaper could not start, so as not to start labs that an earlier reaper is stopping.
func AwaitReaperLock(ctx context.Context, dir string, say func(string, ...any)) error {
	got := make(chan error, 1)
	go func() {
		unlock, err := lockReaper(dir)
		if err == nil {
			unlock()
		}
		got <- err
	}()
	return waitSaying(ctx, got, dir, say)
}

// waitSaying waits for got, says after a second what it waits for, and gives up when ctx ends.
func waitSaying(ctx context.Context, got <-chan error, dir string, say func(string, ...any)) error {
	slow := time.NewTimer(time.Second)
	defer slow.Stop()
	for {
		select {
		case err := <-got:
			return err
		case <-slow.C:
			say("waiting for another tare on this experiment, or the reaper of an earlier one, to stop its labs (it holds %s)",
				filepath.Join(dir, "reaper.lock"))
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// liveReapers holds every started reaper until its release: the write end of a reaper's pipe is an
// *os.File, which the garbage collector would close, telling the reaper tare had died, were it dropped.
var liveReapers sync.Map // *Reaper -> struct{}

// Reaper is a started reaper, to be released when tare has cleaned up itself. A nil *Reaper (none could
// be started) does nothing.
type Reaper struct {
	cmd   *exec.Cmd
	mu    sync.Mutex // stdin's writes
	stdin io.WriteCloser
	log   *os.File
}

// StartReaper starts a reaper of job, logging to job.Lock/reaper.log, and waits until it holds the lock
// (after another tare's or an earlier tare's reaper has finished; say is told when that takes a while). It
// returns nil, nil in a binary that cannot be a reaper (Reap not called: a test binary that does not
// route a reaper to it).
func StartReaper(ctx context.Context, job ReaperJob, say func(string, ...any)) (*Reaper, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if !reaperReady.Load() {
		return nil, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("reaper: %w", err)
	}
	b, _ := json.Marshal(job)
	log, err := os.OpenFile(filepath.Join(job.Lock, "reaper.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("reaper: %w", err)
	}
	// -test.run=^$: a test binary that does not route the reaper runs no test (tare dispatches first).
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), reaperEnv+"="+string(b))
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
	r := &Reaper{cmd: cmd, stdin: stdin, log: log}
	liveReapers.Store(r, struct{}{})
	lines := make(chan string, 2)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	expect := func(word string, timeout <-chan time.Time) error {
		select {
		case line, ok := <-lines:
			if !ok || line != word {
				return fmt.Errorf("it said %q, not %q (see %s)", line, word, log.Name())
			}
			return nil
		case <-timeout:
			return fmt.Errorf("it said nothing in %v", reaperStartTimeout)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if err := expect("started", time.After(reaperStartTimeout)); err != nil {
		r.Release(true)
		return nil, fmt.Errorf("reaper: %w", err)
	}
	ready := make(chan error, 1)
	go func() { ready <- expect("ready", nil) }()
	if err := waitSaying(ctx, ready, job.Lock, say); err != nil {
		r.Release(true)
		return nil, fmt.Errorf("reaper: %w", err)
	}
	return r, nil
}

// Watch adds the lab in dir to what the reaper stops should tare die (a lab started after the reaper).
func (r *Reaper) Watch(dir string) error {
	if r == nil {
		return nil
	}
	if strings.ContainsAny(dir, "\n\r") {
		return fmt.Errorf("reaper: a lab directory with a line break: %q", dir)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, err := io.WriteString(r.stdin, "lab "+dir+"\n"); err != nil {
		return fmt.Errorf("reaper: %w", err)
	}
	return nil
}

// Release tells the reaper that tare has cleaned up (cleaned) and waits for it to exit; without cleaned
// (a panic unwinding) it only lets go of the pipe, and the reaper cleans up.
func (r *Reaper) Release(cleaned bool) {
	if r == nil {
		return
	}
	defer liveReapers.Delete(r)
	r.mu.Lock()
	defer r.mu.Unlock()
	if !cleaned {
		_ = r.stdin.Close()
		return
	}
	_, _ = io.WriteString(r.stdin, "done\n")
	_ = r.stdin.Close()
	done := make(chan struct{})
	go func() { _ = r.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second): // still waiting for another's lock: it has nothing to do now
		_ = r.cmd.Process.Kill()
		<-done
	}
	r.log.Close()
}

// ExitedOK says the reaper has exited with status 0 (after Release).
func (r *Reaper) ExitedOK() bool {
	return r != nil && r.cmd.ProcessState != nil && r.cmd.ProcessState.Success()
}

// The process's own reaper: the labs a process starts that must not outlive it (a test binary's) are
// watched by one reaper, started with the first WatchWithProcess, so that should the process die before
// it stops them (go test's -timeout panics, a kill), the reaper does. ReleaseProcessReaper ends it once
// the process has stopped them itself.
var (
	processReaperOnce sync.Once
	processReaper     *Reaper
)

// WatchWithProcess has the process's reaper stop the lab in dir, and remove the directory, should the
// process die first. In a binary that does not route reapers (Reap not called) it does nothing.
func WatchWithProcess(dir string) error {
	processReaperOnce.Do(func() {
		lock, err := os.MkdirTemp("", "tare-reaper-")
		if err != nil {
			fmt.Fprintf(os.Stderr, "no reaper for this process's labs: %v\n", err)
			return
		}
		r, err := StartReaper(context.Background(), ReaperJob{Lock: lock, What: filepath.Base(os.Args[0]), RemoveLock: true, RemoveLabs: true}, func(string, ...any) {})
		if err != nil || r == nil {
			_ = os.RemoveAll(lock)
			if err != nil {
				fmt.Fprintf(os.Stderr, "no reaper for this process's labs: %v\n", err)
			}
			return
		}
		processReaper = r
	})
	return processReaper.Watch(dir)
}

// ReleaseProcessReaper tells the process's reaper, if one started, that the process has stopped its labs
// itself, and waits for it to end.
func ReleaseProcessReaper() { processReaper.Release(true) }
