package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"
)

// firstRunGoal is the goal for a first run on a fresh machine: tare's build, the lab's install, its
// start and a 60 s measurement.
const firstRunGoal = 5 * time.Minute

// stepTime is one step of a first run: its wall time and the CPU time of the command and every process it
// waited for (the compiler and linker under go build).
type stepTime struct {
	name      string
	wall, cpu time.Duration
	progress  []string // what the step printed on stderr (lab install's per-step lines)
}

// firstRun measures what `make measure` does on a fresh machine, from cold caches: a new, empty Go build
// cache, module cache and tare cache (TARE_CACHE_DIR) under one temporary directory, which it removes at
// the end. Cold, then warm (the same caches, now full): tare's build from the source in src (as make build:
// static, trimmed), `tare lab install`, `tare lab up` in a new lab directory, a measurement of window
// (`tare measure`), and `tare lab down`, which is timed apart and not part of the first run. The Debian
// packages are whatever the machine has: a fresh machine also waits for apt.
func firstRun(ctx context.Context, src string, window time.Duration) error {
	root, err := os.MkdirTemp("", "tare-bench-firstrun-")
	if err != nil {
		return err
	}
	env := append(os.Environ(), "GOCACHE="+filepath.Join(root, "gocache"), "GOMODCACHE="+filepath.Join(root, "gomodcache"),
		"TARE_CACHE_DIR="+filepath.Join(root, "tare-cache"))
	defer func() {
		// The module cache is read-only; go clean -modcache is the way to remove it.
		clean := exec.Command("go", "clean", "-modcache")
		clean.Env = env
		if out, err := clean.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "bench lab: removing the module cache: %v\n%s", err, out)
		}
		if err := os.RemoveAll(root); err != nil {
			fmt.Fprintf(os.Stderr, "bench lab: removing %s: %v\n", root, err)
		}
	}()
	load := loadavg()
	var runs [2][]stepTime
	for i, name := range []string{"cold", "warm"} {
		fmt.Fprintf(os.Stderr, "first run, %s caches (%s)\n", name, root)
		steps, err := firstRunOnce(ctx, src, root, env, window)
		runs[i] = steps
		if err != nil {
			return fmt.Errorf("first run, %s caches: %w", name, err)
		}
	}
	return printFirstRun(os.Stdout, runs, window, load+" at the start, "+loadavg()+" at the end")
}

// firstRunOnce is one first run with the caches in env; lab up gets a new directory.
func firstRunOnce(ctx context.Context, src, root string, env []string, window time.Duration) ([]stepTime, error) {
	tare := filepath.Join(root, "tare")
	dir, err := os.MkdirTemp(root, "lab-")
	if err != nil {
		return nil, err
	}
	var steps []stepTime
	step := func(name, workdir string, env []string, prog string, args ...string) error {
		cmd := exec.CommandContext(ctx, prog, args...)
		cmd.Dir, cmd.Env = workdir, env
		var stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = io.Discard, io.MultiWriter(&stderr, os.Stderr) // progress as it happens
		start := time.Now()
		err := cmd.Run()
		st := stepTime{name: name, wall: time.Since(start), progress: strings.Split(strings.TrimSpace(stderr.String()), "\n")}
		if ps := cmd.ProcessState; ps != nil {
			st.cpu = ps.UserTime() + ps.SystemTime()
		}
		steps = append(steps, st)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		fmt.Fprintf(os.Stderr, "%s: %s (CPU %s)\n", name, st.wall.Round(100*time.Millisecond), st.cpu.Round(100*time.Millisecond))
		return nil
	}
	build := append(append([]string{}, env...), "CGO_ENABLED=0")
	if err := step("tare build", src, build, "go", "build", "-trimpath", "-o", tare, "./cmd/tare"); err != nil {
		return steps, err
	}
	if err := step("lab install", root, env, tare, "lab", "install"); err != nil {
		return steps, err
	}
	upErr := step("lab up", root, env, tare, "lab", "up", "--dir", dir)
	var measureErr error
	if upErr == nil {
		measureErr = step("measure "+window.String(), root, env, tare, "measure", "--duration", window.String(),
			"--kubeconfig", filepath.Join(dir, "kubeconfig"))
	}
	downErr := step("lab down (not counted)", root, env, tare, "lab", "down", "--dir", dir)
	return steps, errors.Join(upErr, measureErr, downErr)
}

// printFirstRun prints each step's wall and CPU time, cold and warm, their total against the goal, and lab
// install's own progress lines of the cold run.
func printFirstRun(w io.Writer, runs [2][]stepTime, window time.Duration, load string) error {
	fmt.Fprintf(w, "First run (tare build, lab install, lab up, %s measurement), n=1 each; load average %s\n", window, load)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "STEP\tCOLD WALL\tCOLD CPU\tWARM WALL\tWARM CPU")
	var total [2]time.Duration
	for i, s := range runs[0] {
		var warm stepTime
		if i < len(runs[1]) {
			warm = runs[1][i]
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", s.name, round(s.wall), round(s.cpu), round(warm.wall), round(warm.cpu))
		if !strings.HasPrefix(s.name, "lab down") {
			total[0] += s.wall
			total[1] += warm.wall
		}
	}
	fmt.Fprintf(tw, "first run\t%s\t\t%s\t\n", round(total[0]), round(total[1]))
	fmt.Fprintf(tw, "goal\t%s\t\t%s\t\n", firstRunGoal, firstRunGoal)
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, s := range runs[0] {
		if s.name == "lab install" {
			fmt.Fprintf(w, "\nlab install, cold, step by step:\n  %s\n", strings.Join(s.progress, "\n  "))
		}
	}
	return nil
}

func round(d time.Duration) string { return d.Round(100 * time.Millisecond).String() }

// loadavg is the machine's load average (1, 5 and 15 minutes), which the figures depend on.
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}
