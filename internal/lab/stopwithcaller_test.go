package lab

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tare-dev/tare/internal/component"
	"github.com/tare-dev/tare/internal/testenv"
)

// upRetuneEnv makes the test binary start a control-plane-only lab with StopWithCaller in the directory it
// names, retune the lab's scheduler (schedulerAlone), print "ready OLD-SCHEDULER-PID" and wait: the caller a
// StopWithCaller lab ends with.
const upRetuneEnv = "TARE_LAB_TEST_UP_RETUNE"

// stopWithCallerOffset moves the test lab's ports away from the single-node labs other tests start and
// from the replicas an experiment runs (offsets 0 to 1500).
const stopWithCallerOffset = 4000

// schedulerAlone is the helper's retune: a scheduler without leader election, which does not end when the
// API server goes (one that leads would, once its lease lapsed, death signal or not), and keeps its
// watches on the API server open until it ends.
var schedulerAlone = Tuning{Component: component.Scheduler, Flag: "leader-elect", Value: "false"}

func upRetuneHelper(dir string) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	st, err := Up(ctx, UpOptions{Dir: dir, ControlPlaneOnly: true, PortOffset: stopWithCallerOffset, StopWithCaller: true})
	if err != nil {
		fmt.Println("up:", err)
		os.Exit(3)
	}
	old := 0
	for _, p := range st.Processes {
		if p.Name == component.Scheduler {
			old = p.PID
		}
	}
	if _, err := at(dir).Retune(ctx, []Tuning{schedulerAlone}, nil); err != nil {
		fmt.Println("retune:", err)
		os.Exit(3)
	}
	fmt.Println("ready", old)
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
	os.Exit(0)
}

// TestStopWithCallerAfterRetune: a lab started with StopWithCaller (an experiment's) ends when the process
// that started it is killed with SIGKILL, the component its own retune restarted too; a component another
// process's retune restarted does not end with either. Ground truth: the lab's recorded processes, by PID
// and start time, in /proc.
func TestStopWithCallerAfterRetune(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real lab")
	}
	if _, err := findBinaries("", component.Names(component.Entry.InLab)); err != nil {
		testenv.Unavailable(t, "the lab is not installed (tare lab install): %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	if err := WaitPortsFree(ctx, UpOptions{ControlPlaneOnly: true, PortOffset: stopWithCallerOffset}); err != nil {
		t.Fatal(err)
	}
	dir := tempLabDir(t)
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), upRetuneEnv+"="+dir)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "ready ") {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("the helper did not start its lab: %q %v", line, err)
	}
	old, _ := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "ready ")))
	st, err := loadState(dir)
	if err != nil {
		t.Fatal(err)
	}
	procs := st.Running()
	var retuned bool
	for _, p := range procs {
		if p.Name == component.Scheduler && p.PID != old {
			retuned = true
		}
	}
	if !retuned || len(procs) < 4 {
		t.Fatalf("running %+v: want etcd, the API server, the controller manager and a scheduler other than PID %d", procs, old)
	}
	// A retune by another process (this one: tare lab retune on the experiment's lab) restarts etcd
	// without the death signal: it must not end with that short-lived process, nor with the lab's
	// starter. (etcd, not a client of the API server: a client left running keeps its watches open and
	// holds the API server's graceful shutdown for up to a minute.)
	if _, err := at(dir).Retune(ctx, []Tuning{schedulerAlone, {Component: component.Etcd, Flag: "snapshot-count", Value: "5000"}}, nil); err != nil {
		t.Fatal(err)
	}
	st, err = loadState(dir)
	if err != nil {
		t.Fatal(err)
	}
	var byOther Process
	procs = procs[:0]
	for _, p := range st.Running() {
		if p.Name == component.Etcd {
			byOther = p
		} else {
			procs = append(procs, p)
		}
	}
	if byOther.PID == 0 {
		t.Fatal("no etcd running after the retune")
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	left := procs
	for deadline := time.Now().Add(30 * time.Second); len(left) > 0 && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		left = left[:0:0]
		for _, p := range procs {
			if alive(p) {
				left = append(left, p)
			}
		}
	}
	for _, p := range left {
		t.Errorf("%s (PID %d) still runs 30 s after the process that started it was killed", p.Name, p.PID)
	}
	if !alive(byOther) {
		t.Errorf("the etcd another process restarted (PID %d) ended with the lab's starter", byOther.PID)
	}
}
