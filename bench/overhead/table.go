package main

import (
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/tare-dev/tare/internal/stats"
)

// table prints one setting's runs; the first run is pidstat, the reference of the ratios. For tare, its
// CPU without the run time of its BPF programs that ran in its own context (the task pass), and with the
// run time of those that ran in other processes' (the exec tracepoints), which its rusage does not hold.
func table(w io.Writer, runs []job, res [][]result) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tMILLICORES (median)\tRANGE\tVS PIDSTAT\tWITHOUT BPF\tWITH ALL BPF\tSTEADY STATE (self-reported)\tSTEADY VS PIDSTAT\tPEAK RSS (max)")
	base := median(millicores(res[0]))
	for i, r := range runs {
		mcs := millicores(res[i])
		var rss int64
		for _, x := range res[i] {
			rss = max(rss, x.maxRSS)
		}
		steady, steadyRatio, without, with := "-", "-", "-", "-"
		if i > 0 {
			st := make([]float64, len(res[i]))
			for j, x := range res[i] {
				st[j] = x.steady
			}
			steady = fmt.Sprintf("%.2f", median(st))
			steadyRatio = fmt.Sprintf("%.2f", median(st)/base)
			without = fmt.Sprintf("%.2f", median(millicoresOf(res[i], func(x result) time.Duration { return x.cpu - x.bpfIn })))
			with = fmt.Sprintf("%.2f", median(millicoresOf(res[i], func(x result) time.Duration { return x.cpu + x.bpfOut })))
		}
		fmt.Fprintf(tw, "%s\t%.2f\t%.2f–%.2f\t%.2f\t%s\t%s\t%s\t%s\t%.1f MiB\n", r.name, median(mcs), slices.Min(mcs), slices.Max(mcs),
			median(mcs)/base, without, with, steady, steadyRatio, float64(rss)/1024)
	}
	return tw.Flush()
}

// startupTable prints the CPU of whole short runs, in milliseconds.
func startupTable(w io.Writer, runs []job, res [][]result) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tCPU ms (median)\tRANGE\tWALL ms (median)\tPEAK RSS (max)")
	for i, r := range runs {
		cpu, wall := make([]float64, len(res[i])), make([]float64, len(res[i]))
		var rss int64
		for j, x := range res[i] {
			cpu[j], wall[j] = ms(x.cpu), ms(x.wall)
			rss = max(rss, x.maxRSS)
		}
		fmt.Fprintf(tw, "%s\t%.1f\t%.1f–%.1f\t%.0f\t%.1f MiB\n", r.name, median(cpu), slices.Min(cpu), slices.Max(cpu),
			median(wall), float64(rss)/1024)
	}
	return tw.Flush()
}

// verdict prints whether a target is met, with the number it is judged on.
func verdict(what string, got float64, unit string, target float64) {
	state := "met"
	if got > target {
		state = "NOT met"
	}
	fmt.Printf("target: %s: %s (%.2f%s)\n", what, state, got, unit)
}

// ratio is the median CPU of a run over pidstat's.
func ratio(tare, pidstat []result) float64 {
	return median(millicores(tare)) / median(millicores(pidstat))
}

// millicores is each run's CPU over its window (or its wall time, when longer).
func millicores(rs []result) []float64 {
	return millicoresOf(rs, func(r result) time.Duration { return r.cpu })
}

// millicoresOf is millicores of another CPU figure of each run.
func millicoresOf(rs []result, cpu func(result) time.Duration) []float64 {
	out := make([]float64, len(rs))
	for i, r := range rs {
		out[i] = float64(cpu(r)) / float64(max(r.window, r.wall)) * 1000
	}
	return out
}

func ms(d time.Duration) float64 { return d.Seconds() * 1000 }

func median(xs []float64) float64 { return stats.MedianOf(xs) }
