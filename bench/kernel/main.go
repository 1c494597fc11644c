// Command kernel is the cost benchmark of tare's kernel-level evidence (make bench-kernel), each beside a
// trusted peer in the same run:
//
//   - the profiler: tare profile (perf_event sampling of every CPU with call chains) against perf record
//     -F 99 -a -g, over the same span, with a known load (one core spinning in this process) and windows
//     with no profiler, alternating. Each profiler's CPU is its whole run's rusage (start-up, its children and
//     writing the output included) over the span it profiled; the spinner's rate against the no-profiler
//     windows shows what the sampling costs inside the kernel, on the CPU it interrupts.
//   - the block I/O tracer: fio (direct 4 KiB random reads, one at a time) alone, beside tare measure,
//     beside tare measure --block-io and beside bpftrace running a biolatency-style script on the same
//     tracepoints, alternating. For each: fio's IOPS and completion latency (p50, p99), fio's CPU per read,
//     the tracer's CPU over fio's run (taskstats), and the in-kernel run time of the tracer's BPF programs
//     (the kernel's BPF statistics, enabled for the block runs).
//
// Runs of each part are interleaved, each repetition in a rotated order, so drift on the machine hits
// every condition alike; compare within one run of the bench. Root.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/tare-dev/tare/bench/internal/cost"
	"github.com/tare-dev/tare/internal/stats"
)

// config is the bench's flags.
type config struct {
	tare        string
	span        time.Duration // each profiler run
	fioSpan     time.Duration // each fio run
	reps        int
	dir         string
	skipProfile bool
	skipBlock   bool
}

func main() {
	var c config
	flag.StringVar(&c.tare, "tare", "bin/tare", "tare binary to measure")
	flag.DurationVar(&c.span, "span", 15*time.Second, "span of each profiler run (and of each no-profiler window)")
	flag.DurationVar(&c.fioSpan, "fio", 10*time.Second, "length of each fio run")
	flag.IntVar(&c.reps, "reps", 3, "repetitions of each condition, interleaved; tables show the median and range")
	flag.StringVar(&c.dir, "dir", "", "directory on a disk for fio's file (default: the temporary directory, or /var/tmp when that is in memory)")
	flag.BoolVar(&c.skipProfile, "skip-profile", false, "skip the profiler runs")
	flag.BoolVar(&c.skipBlock, "skip-block", false, "skip the block I/O tracer runs")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, c)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench kernel:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, c config) error {
	if os.Geteuid() != 0 {
		return errors.New("not root: perf record -a, tare profile and BPF tracers need root")
	}
	if c.reps < 1 {
		return fmt.Errorf("-reps %d: give at least 1", c.reps)
	}
	if _, err := exec.LookPath(c.tare); err != nil {
		return fmt.Errorf("%s: %w (make build builds tare)", c.tare, err)
	}
	fmt.Printf("tare kernel-evidence bench, %s; %s; %d processes; load average %s\n",
		time.Now().Format("2006-01-02 15:04"), machine(), cost.CountProcs(), loadavg())
	if !c.skipProfile {
		if err := profilers(ctx, c); err != nil {
			return err
		}
		fmt.Printf("load average %s\n", loadavg())
	}
	if !c.skipBlock {
		if err := blockTracers(ctx, c); err != nil {
			return err
		}
		fmt.Printf("load average %s\n", loadavg())
	}
	return nil
}

// command is a process the bench starts in its own process group, so that stopping it (the context's end:
// SIGINT to the group, which perf and bpftrace finish on; SIGKILL 10 s later) reaches its children too.
func command(ctx context.Context, argv []string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGINT) }
	cmd.WaitDelay = 10 * time.Second
	return cmd
}

// finished is a command run to its end: its output and its rusage.
type finished struct {
	stdout, stderr []byte
	cpu            time.Duration // user + system, its children waited for included
}

// runToEnd runs argv to its end (or the context's) and reads its CPU from rusage.
func runToEnd(ctx context.Context, argv []string) (finished, error) {
	cmd := command(ctx, argv)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	reap(cmd)
	if ctx.Err() != nil {
		return finished{}, ctx.Err()
	}
	if err != nil {
		return finished{}, fmt.Errorf("%s: %w: %s", argv[0], err, bytes.TrimSpace(stderr.Bytes()))
	}
	f := finished{stdout: stdout.Bytes(), stderr: stderr.Bytes()}
	if f.cpu, _, err = cost.Waited(cmd.ProcessState); err != nil {
		return finished{}, fmt.Errorf("%s: %w", argv[0], err)
	}
	return f, nil
}

// reap kills whatever is left of a finished command's process group (a child it left behind).
func reap(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}

// order is repetition rep's order of n conditions: rotated by one each repetition.
func order(rep, n int) []int {
	o := make([]int, n)
	for i := range o {
		o[i] = (rep + i) % n
	}
	return o
}

// wait sleeps d, or until ctx ends.
func wait(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// machine names the CPU model, the CPUs and the kernel.
func machine() string {
	model := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "model name"); ok {
				model = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	var u syscall.Utsname
	kernel := "unknown kernel"
	if syscall.Uname(&u) == nil {
		b := make([]byte, 0, len(u.Release))
		for _, c := range u.Release {
			if c == 0 {
				break
			}
			b = append(b, byte(c))
		}
		kernel = "Linux " + string(b)
	}
	return fmt.Sprintf("%s, %d CPUs, %s", model, runtime.NumCPU(), kernel)
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}

func median(xs []float64) float64 { return stats.MedianOf(xs) }

// spread is "median (min–max)" of xs with format f.
func spread(f string, xs []float64) string {
	if len(xs) == 0 {
		return "-"
	}
	lo, hi := xs[0], xs[0]
	for _, x := range xs {
		lo, hi = min(lo, x), max(hi, x)
	}
	return fmt.Sprintf(f+" ("+f+"–"+f+")", median(xs), lo, hi)
}
