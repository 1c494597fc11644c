package experiment

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tare-dev/tare/internal/kernel"
	"github.com/tare-dev/tare/internal/lab"
)

// alive says whether a process other than a zombie has the PID.
func alive(pid int) bool {
	st, err := kernel.ReadProcStat("/proc", pid)
	return err == nil && st.State != 'Z'
}

// TestStartRuns: run commands beside three labs start together, each with its replica in the environment
// and its own process group, and one stop ends them all, the one ignoring SIGTERM too (SIGKILL 2 s on).
func TestStartRuns(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var runs []runAt
	for k := 1; k <= 3; k++ {
		run := `echo "$TARE_VARIANT $TARE_REPLICA $KUBECONFIG $TARE_EXPERIMENT ${#TARE_RUN_ID}"; exec sleep 60`
		if k == 3 {
			run = `trap "" TERM; echo "$TARE_VARIANT $TARE_REPLICA $KUBECONFIG $TARE_EXPERIMENT ${#TARE_RUN_ID}"; sleep 60; sleep 60`
		}
		runs = append(runs, runAt{v: Variant{Name: "b", Run: run}, logPath: filepath.Join(dir, "run-"+strconv.Itoa(k)+".log"),
			kubeconfig: "/kc-" + strconv.Itoa(k), replica: k})
	}
	shells, stop, err := startRuns(context.Background(), dir, runs)
	if err != nil {
		t.Fatal(err)
	}
	if len(shells) != 3 {
		t.Fatalf("shells %v, want 3", shells)
	}
	for k, sh := range shells {
		pid := sh.PID
		if !alive(pid) {
			t.Errorf("run %d (PID %d) is not running after the start", k+1, pid)
		}
		if pgid, err := syscall.Getpgid(pid); err != nil || pgid != pid {
			t.Errorf("run %d: process group %d (%v), want its own (%d)", k+1, pgid, err, pid)
		}
		// The start time the shell is matched by is its own, from its stat.
		if st, err := kernel.ReadProcStat("/proc", pid); err != nil || st.Starttime != sh.Start {
			t.Errorf("run %d: start %d, its stat says %d (%v)", k+1, sh.Start, st.Starttime, err)
		}
	}
	stop()
	for k, sh := range shells {
		pid := sh.PID
		if alive(pid) {
			t.Errorf("run %d (PID %d) still runs after stop", k+1, pid)
		}
		b, _ := os.ReadFile(runs[k].logPath)
		if want := "b " + strconv.Itoa(k+1) + " /kc-" + strconv.Itoa(k+1) + " " + dir + " 16"; strings.TrimSpace(string(b)) != want {
			t.Errorf("run %d logged %q, want %q", k+1, b, want)
		}
	}
}

// TestStartRunsExitAtOnce: a run command that exits at once fails the start with its status and output,
// and the commands started beside it are stopped.
func TestStartRunsExitAtOnce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	marker := filepath.Join(dir, "first-pid")
	runs := []runAt{
		{v: Variant{Name: "b", Run: "echo $$ > " + marker + "; exec sleep 60"}, logPath: filepath.Join(dir, "1.log"), replica: 1},
		{v: Variant{Name: "b", Run: "echo no such tool; exit 3"}, logPath: filepath.Join(dir, "2.log"), replica: 2},
	}
	_, _, err := startRuns(context.Background(), dir, runs)
	if err == nil || !strings.Contains(err.Error(), "exit status 3") || !strings.Contains(err.Error(), "no such tool") {
		t.Fatalf("err %v, want the exit status and the command's output", err)
	}
	b, rerr := os.ReadFile(marker)
	if rerr != nil {
		t.Fatal(rerr)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	deadline := time.Now().Add(5 * time.Second)
	for alive(pid) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if alive(pid) {
		t.Errorf("the first run (PID %d) was left running after the second failed", pid)
	}
}

// readPIDs reads the PIDs a run command wrote to path, one a line, waiting up to 5 s for want of them.
func readPIDs(t *testing.T, path string, want int) []int {
	t.Helper()
	var pids []int
	deadline := time.Now().Add(5 * time.Second)
	for {
		pids = pids[:0]
		b, _ := os.ReadFile(path)
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				pids = append(pids, pid)
			}
		}
		if len(pids) >= want || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(pids) != want {
		t.Fatalf("%s holds PIDs %v, want %d", path, pids, want)
	}
	return pids
}

// waitGone waits up to d for the processes to be gone (or zombies) and returns those still running.
func waitGone(pids []int, d time.Duration) []int {
	var left []int
	lab.WaitUntil(d, func() bool {
		left = left[:0]
		for _, pid := range pids {
			if alive(pid) {
				left = append(left, pid)
			}
		}
		return len(left) == 0
	})
	return left
}

// TestStopRunsLeftGroup: processes a run command started outside its process group (setsid), one of them
// ignoring SIGTERM, end with the run: they carry its TARE_RUN_ID. A process of another run beside it
// (another TARE_RUN_ID, the same experiment) is left alone.
func TestStopRunsLeftGroup(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pids := filepath.Join(dir, "pids")
	run := `setsid sleep 60 & echo $! >> ` + pids + `; setsid sh -c 'trap "" TERM; sleep 60; sleep 60' & echo $! >> ` + pids + `; exec sleep 60`
	_, stop, err := startRuns(context.Background(), dir, []runAt{{v: Variant{Name: "b", Run: run}, logPath: filepath.Join(dir, "1.log"), replica: 1}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop) // on a failure below; stop runs once
	escaped := readPIDs(t, pids, 2)
	for _, pid := range escaped {
		if !lab.WaitUntil(5*time.Second, func() bool { pgid, _ := syscall.Getpgid(pid); return pgid == pid }) {
			t.Fatalf("PID %d: not in a process group of its own (setsid) after 5 s", pid)
		}
	}
	other := filepath.Join(dir, "other")
	_, stopOther, err := startRuns(context.Background(), dir, []runAt{{v: Variant{Name: "b", Run: `setsid sleep 60 & echo $! > ` + other + `; exec sleep 60`}, logPath: filepath.Join(dir, "2.log"), replica: 2}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stopOther)
	otherPID := readPIDs(t, other, 1)
	began := time.Now()
	stop()
	if left := waitGone(escaped, time.Second); len(left) > 0 {
		t.Errorf("processes %v the run started outside its group outlived its stop", left)
	}
	if took := time.Since(began); took < runKillGrace {
		t.Errorf("stop took %v: the process ignoring SIGTERM had less than %v", took, runKillGrace)
	}
	if !alive(otherPID[0]) {
		t.Errorf("another run's process (PID %d) was stopped with this run", otherPID[0])
	}
}

// TestLeftoverRunsAfterKill: tare is killed while a run command runs; its shell dies with tare (Pdeathsig)
// and what the shell started lives on, re-parented; stopLeftoverRuns, as --resume calls it, ends exactly
// those processes: a process with another experiment's TARE_EXPERIMENT is left alone.
func TestLeftoverRunsAfterKill(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pids := filepath.Join(dir, "pids")
	shellFile := filepath.Join(dir, "shell")
	helper := startHelper(t, dir, false,
		`echo $$ > `+shellFile+`; sleep 60 & echo $! >> `+pids+`; sh -c 'trap "" TERM; echo $$ >> `+pids+`; sleep 60; sleep 60' & wait`)
	children, shell := readPIDs(t, pids, 2), readPIDs(t, shellFile, 1)[0]
	// Another experiment's leftover, which must stay.
	otherDir := t.TempDir()
	other := exec.Command("sleep", "60")
	other.Env = append(os.Environ(), envExperiment+"="+otherDir)
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = other.Process.Kill(); _ = other.Wait() })

	killHelper(helper, "")
	if left := waitGone([]int{shell}, 5*time.Second); len(left) > 0 {
		t.Fatalf("the run's shell (PID %d) outlived the killed tare", shell)
	}
	for _, pid := range children {
		if !alive(pid) {
			t.Fatalf("the run's child %d ended with tare: nothing left to test", pid)
		}
	}
	found := stopLeftoverRuns("/proc", dir) // the children and the inner shell's sleep
	for _, pid := range children {
		if !slices.Contains(found, pid) {
			t.Errorf("stopLeftoverRuns found %v, not the run's child %d", found, pid)
		}
	}
	if left := waitGone(found, time.Second); len(left) > 0 {
		t.Errorf("leftovers %v still run after stopLeftoverRuns", left)
	}
	if !alive(other.Process.Pid) {
		t.Errorf("another experiment's process (PID %d) was stopped", other.Process.Pid)
	}
	if again := stopLeftoverRuns("/proc", dir); len(again) != 0 {
		t.Errorf("a second stopLeftoverRuns found %v", again)
	}
}

// startHelper starts the stand-in for tare: this test binary starting run as a run command of the
// experiment in dir (after its reaper, withReaper), then waiting to be killed; the test's end kills it and
// what its run left.
func startHelper(t *testing.T, dir string, withReaper bool, run string) *exec.Cmd {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	helper := exec.Command(self, "-test.run=^$")
	helper.Env = append(os.Environ(), helperRunsEnv+"="+dir, helperRunEnv+"="+run)
	if withReaper {
		helper.Env = append(helper.Env, helperReaperEnv+"=1")
	}
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { killHelper(helper, dir) })
	return helper
}

// killHelper kills a helper standing in for tare (once) and, with dir, what its runs left there.
func killHelper(helper *exec.Cmd, dir string) {
	if helper.ProcessState == nil {
		_ = helper.Process.Kill()
		_ = helper.Wait()
	}
	if dir != "" {
		stopLeftoverRuns(ownProc, dir)
	}
}

// The helper of TestLeftoverRunsAfterKill: with helperRunsEnv set, the test binary starts helperRunEnv's
// command as a run of the experiment in that directory and waits to be killed.
const (
	helperRunsEnv = "TARE_EXPERIMENT_TEST_RUNS_DIR"
	helperRunEnv  = "TARE_EXPERIMENT_TEST_RUN"
	// helperReaperEnv makes the helper start a reaper before its run.
	helperReaperEnv = "TARE_EXPERIMENT_TEST_REAPER"
)

func TestMain(m *testing.M) {
	if code, asked := lab.Reap(os.Stdin, os.Stdout, os.Stderr); asked {
		os.Exit(code)
	}
	if dir := os.Getenv(helperRunsEnv); dir != "" {
		if os.Getenv(helperReaperEnv) != "" {
			// Kept (liveReapers holds it too): a dropped reaper's pipe closed by the collector would look
			// like this helper's death.
			if _, err := lab.StartReaper(context.Background(), reaperJob(dir, nil), func(string, ...any) {}); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			runtime.GC() // the pipe stays open: only the helper's death closes it
		}
		_, _, err := startRuns(context.Background(), dir, []runAt{{v: Variant{Name: "b", Run: os.Getenv(helperRunEnv)}, logPath: filepath.Join(dir, "helper.log"), replica: 1}})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		select {}
	}
	os.Exit(m.Run())
}
