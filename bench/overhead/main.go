// Command overhead is tare's overhead benchmark (make bench): tare's own CPU and peak memory while sampling a
// node with ~300 processes, side by side with pidstat -u -r -d over the same window.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"
)

type result struct {
	name   string
	cpu    time.Duration
	window time.Duration
	maxRSS int64   // KiB
	steady float64 // tare only: its own CPU after the baseline sample, as it reports it (millicores)
}

func main() {
	tare := flag.String("tare", "bin/tare", "tare binary to measure")
	window := flag.Duration("window", 30*time.Second, "length of each run")
	procs := flag.Int("procs", 300, "processes on the node during the runs (idle sleepers are added)")
	reps := flag.Int("reps", 3, "repetitions of each run, interleaved; the table shows the median and range")
	flag.Parse()
	if err := run(*tare, *window, *procs, *reps); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(tare string, window time.Duration, procs, reps int) error {
	ctx := context.Background()
	stop, n, err := fill(procs)
	defer stop()
	if err != nil {
		return err
	}
	secs := strconv.Itoa(int(window.Seconds()))
	dir, err := os.MkdirTemp("", "tare-bench")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	runs := []struct {
		name string
		argv []string
	}{
		{"pidstat -u -r -d 1", []string{"pidstat", "-u", "-r", "-d", "1", secs}},
		{"tare measure --interval 1s", []string{tare, "measure", "-o", "json", "--duration", window.String(), "--interval", "1s"}},
		{"tare measure --interval 1s --record", []string{tare, "measure", "-o", "json", "--duration", window.String(), "--interval", "1s", "--record", filepath.Join(dir, "r%d.db")}},
		{"tare measure --interval 100ms", []string{tare, "measure", "-o", "json", "--duration", window.String(), "--interval", "100ms"}},
	}
	byRun := make([][]result, len(runs))
	for rep := 0; rep < reps; rep++ {
		for i, r := range runs { // interleaved, so drift on the machine hits every run alike
			argv := slices.Clone(r.argv)
			for j, a := range argv {
				if strings.Contains(a, "%d") {
					argv[j] = fmt.Sprintf(a, rep)
				}
			}
			res, err := measure(ctx, r.name, argv, window)
			if err != nil {
				return err
			}
			byRun[i] = append(byRun[i], res)
		}
	}
	fmt.Printf("processes on the node: %d; window %s; %d interleaved repetitions; CPU from getrusage of each run (startup included)\n\n", n, window, reps)
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tMILLICORES (median)\tRANGE\tVS PIDSTAT\tSTEADY STATE (self-reported)\tSTEADY VS PIDSTAT\tPEAK RSS (max)")
	base := median(millicores(byRun[0]))
	for i, r := range runs {
		mcs := millicores(byRun[i])
		var rss int64
		for _, x := range byRun[i] {
			rss = max(rss, x.maxRSS)
		}
		steady, steadyRatio := "-", "-"
		if i > 0 {
			st := make([]float64, len(byRun[i]))
			for j, x := range byRun[i] {
				st[j] = x.steady
			}
			steady = fmt.Sprintf("%.2f", median(st))
			steadyRatio = fmt.Sprintf("%.2f", median(st)/base)
		}
		fmt.Fprintf(tw, "%s\t%.2f\t%.2f–%.2f\t%.2f\t%s\t%s\t%.1f MiB\n", r.name, median(mcs), slices.Min(mcs), slices.Max(mcs),
			median(mcs)/base, steady, steadyRatio, float64(rss)/1024)
	}
	return tw.Flush()
}

func millicores(rs []result) []float64 {
	out := make([]float64, len(rs))
	for i, r := range rs {
		out[i] = float64(r.cpu) / float64(r.window) * 1000
	}
	return out
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// measure runs argv to completion and reads its CPU and peak RSS from the kernel's rusage.
func measure(ctx context.Context, name string, argv []string, window time.Duration) (result, error) {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	start := time.Now()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return result{}, fmt.Errorf("%s: %w\n%s", name, err, stderr.Bytes())
	}
	var self struct {
		Self struct {
			CPU struct {
				Mean float64 `json:"mean"`
			} `json:"cpu_millicores"`
		} `json:"self"`
	}
	steady := 0.0
	if json.Unmarshal(out, &self) == nil {
		steady = self.Self.CPU.Mean
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		return result{}, fmt.Errorf("%s: no rusage", name)
	}
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	return result{name: name, cpu: cpu, window: max(window, time.Since(start)), maxRSS: ru.Maxrss, steady: steady}, nil
}

// fill starts idle sleepers until the node has about n processes.
func fill(n int) (func(), int, error) {
	var cmds []*exec.Cmd
	stop := func() {
		for _, c := range cmds {
			_ = c.Process.Kill()
			_ = c.Wait()
		}
	}
	have := countProcs()
	for have < n {
		c := exec.Command("sleep", "3600")
		if err := c.Start(); err != nil {
			return stop, have, err
		}
		cmds = append(cmds, c)
		have++
	}
	return stop, countProcs(), nil
}

func countProcs() int {
	ents, _ := os.ReadDir("/proc")
	n := 0
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err == nil {
			n++
		}
	}
	return n
}
