package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/tare-dev/tare/bench/internal/cost"
)

// job is one command the bench measures. A "%d" in an argument is replaced by the repetition number.
type job struct {
	name string
	argv []string
	env  []string // added to the bench's environment (TARE_TASK_PASS=...)
}

// result is one finished run.
type result struct {
	cpu    time.Duration // user + system, from wait4
	wall   time.Duration
	window time.Duration // the run's nominal window (0: use wall)
	maxRSS int64         // KiB
	steady float64       // tare only: its own CPU after the baseline sample, as it reports it (millicores)
	// tare only: the run time of its BPF programs over the window, as it reports it (self_bpf), in CPU time:
	// bpfIn ran in tare's own context (the task pass), so it is inside cpu; bpfOut ran in other processes'
	// (the exec tracepoints at each fork and exec), so it is not.
	bpfIn, bpfOut time.Duration
}

// interleave runs every run reps times, one of each in turn.
func interleave(ctx context.Context, runs []job, reps int, window time.Duration) ([][]result, error) {
	out := make([][]result, len(runs))
	for rep := range reps {
		for i, r := range runs {
			argv := make([]string, len(r.argv))
			for j, a := range r.argv {
				argv[j] = strings.ReplaceAll(a, "%d", strconv.Itoa(rep))
			}
			res, err := measure(ctx, r, argv, window)
			if err != nil {
				return nil, err
			}
			out[i] = append(out[i], res)
		}
	}
	return out, nil
}

// measure runs argv to completion and reads its CPU and peak RSS from the kernel's rusage.
func measure(ctx context.Context, r job, argv []string, window time.Duration) (result, error) {
	name := r.name
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(append(os.Environ(), "LC_ALL=C"), r.env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return result{}, fmt.Errorf("%s: %w\n%s", name, err, stderr.Bytes())
	}
	wall := time.Since(start)
	cpu, maxRSS, err := cost.Waited(cmd.ProcessState)
	if err != nil {
		return result{}, fmt.Errorf("%s: %w", name, err)
	}
	var self struct {
		Self struct {
			CPU struct {
				Mean float64 `json:"mean"`
			} `json:"cpu_millicores"`
		} `json:"self"`
		BPF struct {
			Outside float64 `json:"outside_millicores"`
			InSelf  float64 `json:"in_self_millicores"`
		} `json:"self_bpf"`
		Meta struct {
			Duration time.Duration `json:"duration_ns"`
		} `json:"meta"`
	}
	res := result{cpu: cpu, wall: wall, window: window, maxRSS: maxRSS}
	if json.Unmarshal(stdout.Bytes(), &self) == nil {
		res.steady = self.Self.CPU.Mean
		secs := self.Meta.Duration.Seconds()
		res.bpfIn = time.Duration(self.BPF.InSelf * secs * float64(time.Millisecond))
		res.bpfOut = time.Duration(self.BPF.Outside * secs * float64(time.Millisecond))
	}
	return res, nil
}

// sleepers are idle processes the bench starts to set the node's process count.
type sleepers struct{ procs []*os.Process }

// startSleepers starts n `sleep` processes; stop removes them (call it even after an error).
func startSleepers(n int) (*sleepers, error) {
	s := &sleepers{}
	path, err := exec.LookPath("sleep")
	if err != nil {
		return s, fmt.Errorf("idle processes: %w", err)
	}
	for range n {
		p, err := os.StartProcess(path, []string{"sleep", "86400"}, &os.ProcAttr{})
		if err != nil {
			return s, fmt.Errorf("starting idle process %d of %d: %w (raise ulimit -u or pid_max)", len(s.procs)+1, n, err)
		}
		s.procs = append(s.procs, p)
	}
	time.Sleep(time.Second) // let them all reach their sleep before anything is measured
	return s, nil
}

func (s *sleepers) len() int { return len(s.procs) }

func (s *sleepers) stop() {
	for _, p := range s.procs {
		_ = p.Kill()
	}
	for _, p := range s.procs {
		_, _ = p.Wait()
	}
	s.procs = nil
}
