package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/tare-dev/tare/bench/internal/cost"
)

// biolatency is bpftrace's biolatency.bt on the tracepoints tare's tracer uses (the original hooks kprobes
// that newer kernels inline): each request's issue-to-completion time in a log2 histogram.
const biolatency = `tracepoint:block:block_rq_issue { @start[args->dev, args->sector] = nsecs; }
tracepoint:block:block_rq_complete /@start[args->dev, args->sector]/ {
	@usecs = hist((nsecs - @start[args->dev, args->sector]) / 1000);
	delete(@start[args->dev, args->sector]);
}
`

// fioFileSize is the file fio reads at random: larger than anything the disk's own cache would make
// uninteresting, small enough to write in a second.
const fioFileSize = 128 << 20

// tracer is one condition of the block runs: a process running beside fio (none when argv is nil), ready
// once it holds progs BPF programs.
type tracer struct {
	name  string
	argv  []string
	progs int
}

// blockRun is one fio run beside one tracer.
type blockRun struct {
	iops       float64
	p50, p99   time.Duration // fio's completion latency
	fioCPU     time.Duration // fio's rusage
	ios        uint64
	span       time.Duration // fio's run
	tracerCPU  time.Duration // over fio's run (taskstats)
	tracerAll  time.Duration // the tracer's whole life, start-up included (rusage)
	bpfNs      uint64        // the tracer's BPF programs' run time over fio's run
	bpfRuns    uint64
	tracerPeak uint64 // VmHWM, bytes
}

func blockTracers(ctx context.Context, c config) error {
	for _, bin := range []string{"fio", "bpftrace"} {
		if _, err := exec.LookPath(bin); err != nil {
			return fmt.Errorf("%s: %w (make bench-kernel installs it)", bin, err)
		}
	}
	dir, err := diskDir(c.dir)
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	file := filepath.Join(dir, "fio.dat")
	if err := writeFile(file, fioFileSize); err != nil {
		return err
	}
	script := filepath.Join(dir, "biolatency.bt")
	if err := os.WriteFile(script, []byte(biolatency), 0o644); err != nil {
		return err
	}
	// fio's own binary and libraries are read from disk when not cached: a short run first, so that the
	// measured ones read only the file.
	if _, err := runFio(ctx, file, time.Second); err != nil {
		return err
	}
	// The kernel counts each BPF program's run time only while statistics are enabled (a clock read before
	// and after each run, for every program on the node, until this bench ends).
	bpfStats, err := ebpf.EnableStats(uint32(unix.BPF_STATS_RUN_TIME))
	if err != nil {
		return fmt.Errorf("enabling the kernel's BPF statistics: %w", err)
	}
	defer bpfStats.Close()
	forever := "1h" // the tracers run until the bench stops them
	conds := []tracer{
		{name: "fio alone"},
		{name: "tare measure", argv: []string{c.tare, "-o", "json", "measure", "--duration", forever}},
		{name: "tare measure --block-io", argv: []string{c.tare, "-o", "json", "measure", "--block-io", "--duration", forever}, progs: 4},
		{name: "bpftrace biolatency", argv: []string{"bpftrace", script}, progs: 2},
	}
	fmt.Printf("\nblock I/O tracers: fio --rw=randread --bs=4k --direct=1 --ioengine=psync (one read at a time) on a %d MiB file in %s, %s a run, %d repetitions interleaved\n",
		fioFileSize>>20, dir, c.fioSpan, c.reps)
	res := make([][]blockRun, len(conds))
	for rep := range c.reps {
		for _, i := range order(rep, len(conds)) {
			r, err := blockOnce(ctx, conds[i], file, c.fioSpan, dir)
			if err != nil {
				return fmt.Errorf("%s: %w", conds[i].name, err)
			}
			res[i] = append(res[i], r)
			fmt.Fprintf(os.Stderr, "  %s: %.0f IOPS, p50 %v, p99 %v, tracer %.2fm\n", conds[i].name, r.iops, r.p50, r.p99,
				r.tracerCPU.Seconds()/r.span.Seconds()*1000)
		}
	}
	return blockTable(conds, res)
}

// blockOnce starts t, waits until its BPF programs are loaded and a second more, runs fio, and stops t.
func blockOnce(ctx context.Context, t tracer, file string, span time.Duration, dir string) (blockRun, error) {
	if t.argv == nil {
		return runFio(ctx, file, span)
	}
	cmd := command(ctx, t.argv)
	log, err := os.Create(filepath.Join(dir, "tracer.log"))
	if err != nil {
		return blockRun{}, err
	}
	defer log.Close()
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return blockRun{}, err
	}
	stopped := false
	defer func() {
		if !stopped {
			cost.Stop(cmd)
		}
		reap(cmd)
	}()
	pid := cmd.Process.Pid
	if err := waitPrograms(ctx, pid, t.progs); err != nil {
		return blockRun{}, err
	}
	if err := wait(ctx, time.Second); err != nil {
		return blockRun{}, err
	}
	at0, err := tracerAt(pid)
	if err != nil {
		return blockRun{}, err
	}
	r, err := runFio(ctx, file, span)
	if err != nil {
		return blockRun{}, err
	}
	at1, err := tracerAt(pid)
	if err != nil {
		return blockRun{}, err
	}
	if r.tracerPeak, err = cost.PeakRSS(pid); err != nil {
		return blockRun{}, err
	}
	r.tracerCPU, r.bpfNs, r.bpfRuns = at1.cpu-at0.cpu, at1.bpfNs-at0.bpfNs, at1.bpfRuns-at0.bpfRuns
	cost.Stop(cmd)
	stopped = true
	if r.tracerAll, _, err = cost.Waited(cmd.ProcessState); err != nil {
		return blockRun{}, err
	}
	return r, nil
}

// tracerState is a running tracer's CPU and its BPF programs' run time and runs so far.
type tracerState struct {
	cpu            time.Duration
	bpfNs, bpfRuns uint64
}

func tracerAt(pid int) (tracerState, error) {
	cpu, err := cost.CPU(pid)
	if err != nil {
		return tracerState{}, fmt.Errorf("the tracer's CPU: %w", err)
	}
	ns, runs, err := bpfRunTime(pid)
	return tracerState{cpu: cpu, bpfNs: ns, bpfRuns: runs}, err
}

// waitPrograms waits until process pid holds n BPF programs (30 s at most).
func waitPrograms(ctx context.Context, pid, n int) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		ids, err := bpfPrograms(pid)
		if err != nil {
			return err
		}
		if len(ids) >= n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("holds %d BPF programs after 30 s, want %d", len(ids), n)
		}
		if err := wait(ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
}

// fioResult is the part of fio's JSON output the bench reads.
type fioResult struct {
	Jobs []struct {
		Read struct {
			IOPS     float64 `json:"iops"`
			TotalIOs uint64  `json:"total_ios"`
			RuntimeM float64 `json:"runtime"` // ms
			ClatNs   struct {
				Percentile map[string]float64 `json:"percentile"`
			} `json:"clat_ns"`
		} `json:"read"`
	} `json:"jobs"`
}

// runFio reads file at random for span, 4 KiB with direct I/O, one read at a time (the job of
// internal/blockio's fio test), and returns its rate, its completion latency and its own CPU.
func runFio(ctx context.Context, file string, span time.Duration) (blockRun, error) {
	run, err := runToEnd(ctx, []string{"fio", "--name=randread", "--filename=" + file, fmt.Sprintf("--size=%d", fioFileSize),
		"--rw=randread", "--bs=4k", "--direct=1", "--ioengine=psync", "--time_based", "--thread",
		fmt.Sprintf("--runtime=%dms", span.Milliseconds()), "--output-format=json"})
	if err != nil {
		return blockRun{}, err
	}
	out := run.stdout
	if i := bytes.IndexByte(out, '{'); i > 0 { // warnings before the JSON
		out = out[i:]
	}
	var f fioResult
	if err := json.Unmarshal(out, &f); err != nil || len(f.Jobs) != 1 {
		return blockRun{}, fmt.Errorf("fio's output: %w, %d jobs: %.300s", err, len(f.Jobs), out)
	}
	j := f.Jobs[0].Read
	p50, ok50 := j.ClatNs.Percentile["50.000000"]
	p99, ok99 := j.ClatNs.Percentile["99.000000"]
	if !ok50 || !ok99 {
		return blockRun{}, errors.New("fio's output has no 50th or 99th percentile of completion latency")
	}
	return blockRun{iops: j.IOPS, p50: time.Duration(p50), p99: time.Duration(p99), ios: j.TotalIOs,
		span: time.Duration(j.RuntimeM * float64(time.Millisecond)), fioCPU: run.cpu}, nil
}

func blockTable(conds []tracer, res [][]blockRun) error {
	fmt.Println("\nIOPS and completion latency are fio's; fio's CPU per read is its rusage (the BPF programs on the issue path run in it).")
	fmt.Println("The tracer's CPU is its thread group's over fio's run (taskstats); its whole life's CPU includes its start-up.")
	fmt.Println("BPF is the in-kernel run time of the tracer's programs over fio's run (the programs' bodies; not the tracepoint's or trampoline's",
		"own cost), in millicores, per program run, and per fio read (the node's other block I/O included).")
	fmt.Println()
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CONDITION\tIOPS (median, min–max)\tP50 µs\tP99 µs\tFIO CPU PER READ\tTRACER MILLICORES\tTRACER CPU, WHOLE LIFE\tBPF MILLICORES\tBPF PER RUN\tBPF PER READ\tPEAK RSS")
	iops := make([]float64, len(conds))
	tracerMC := make([]float64, len(conds))
	for i, t := range conds {
		var io, p50, p99, fioCPU, mc, life, bpfMC, perRun, perRead []float64
		var peak uint64
		for _, r := range res[i] {
			io = append(io, r.iops)
			p50 = append(p50, float64(r.p50)/1e3)
			p99 = append(p99, float64(r.p99)/1e3)
			fioCPU = append(fioCPU, float64(r.fioCPU)/1e3/float64(max(r.ios, 1)))
			mc = append(mc, r.tracerCPU.Seconds()/r.span.Seconds()*1000)
			life = append(life, r.tracerAll.Seconds())
			bpfMC = append(bpfMC, float64(r.bpfNs)/1e6/r.span.Seconds())
			if r.bpfRuns > 0 {
				perRun = append(perRun, float64(r.bpfNs)/float64(r.bpfRuns))
				perRead = append(perRead, float64(r.bpfNs)/float64(max(r.ios, 1)))
			}
			peak = max(peak, r.tracerPeak)
		}
		iops[i] = median(io)
		if t.argv == nil {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.1f µs\t-\t-\t-\t-\t-\t-\n", t.name, spread("%.0f", io), spread("%.0f", p50), spread("%.0f", p99), median(fioCPU))
			continue
		}
		tracerMC[i] = median(mc)
		bpf, run, read := "-", "-", "-"
		if len(perRun) > 0 {
			bpf, run, read = spread("%.2f", bpfMC), fmt.Sprintf("%.0f ns", median(perRun)), fmt.Sprintf("%.0f ns", median(perRead))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.1f µs\t%s\t%.2f s\t%s\t%s\t%s\t%.1f MiB\n", t.name, spread("%.0f", io), spread("%.0f", p50),
			spread("%.0f", p99), median(fioCPU), spread("%.2f", mc), median(life), bpf, run, read, float64(peak)/(1<<20))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for i := 1; i < len(conds); i++ {
		fmt.Printf("IOPS beside %s ÷ fio alone: %.3f\n", conds[i].name, iops[i]/iops[0])
	}
	fmt.Printf("user-space CPU, tare measure --block-io ÷ bpftrace: %.2f× (tare also samples every process each second);",
		tracerMC[2]/tracerMC[3])
	fmt.Printf(" the tracer's share, tare measure --block-io − tare measure: %+.2f millicores\n", tracerMC[2]-tracerMC[1])
	return nil
}

// diskDir makes a temporary directory on a disk: in dir, else the temporary directory, or /var/tmp when
// that is in memory (tmpfs).
func diskDir(dir string) (string, error) {
	d, err := os.MkdirTemp(dir, "tare-bench-kernel-fio")
	if err != nil {
		return "", err
	}
	var fs unix.Statfs_t
	if err := unix.Statfs(d, &fs); err != nil || fs.Type != unix.TMPFS_MAGIC || dir != "" {
		return d, err
	}
	_ = os.Remove(d)
	return os.MkdirTemp("/var/tmp", "tare-bench-kernel-fio")
}

// writeFile writes size bytes to a new file and syncs it, so that fio lays out nothing during its runs.
func writeFile(path string, size int) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	buf := bytes.Repeat([]byte{0xa5}, 1<<20)
	for n := 0; n < size; n += len(buf) {
		if _, err := f.Write(buf); err != nil {
			f.Close()
			return fmt.Errorf("writing fio's file: %w", err)
		}
	}
	if err := errors.Join(f.Sync(), f.Close()); err != nil {
		return fmt.Errorf("writing fio's file: %w", err)
	}
	return nil
}
