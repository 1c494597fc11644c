// Command datapath is the data-path benchmark (make bench-datapath): a default `tare datapath net` run on
// a two-node lab (host, pod-same-node, vxlan and clusterip × tcp-stream and tcp-rr × 1k and 16k, 5
// trials of 4 s each, the default), timed, with each ratio's interval width and the smallest throughput difference
// the host path's own noise lets 5 + 5 trials detect (80% power, α = 0.05, Mann–Whitney's efficiency).
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"gonum.org/v1/gonum/stat"

	"github.com/tare-dev/tare/internal/datapath"
	"github.com/tare-dev/tare/internal/datapath/netpath"
	"github.com/tare-dev/tare/internal/stats"
)

func main() {
	tare := flag.String("tare", "bin/tare", "tare binary")
	flag.Parse()
	if err := run(*tare); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(tare string) error {
	dir, err := os.MkdirTemp("", "tare-bench-dp-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	defer func() { _ = exec.Command(tare, "lab", "down", "--dir", dir).Run() }() // also after a half-done up
	for _, args := range [][]string{{"lab", "install", "--datapath"}, {"lab", "up", "--dir", dir, "--nodes", "2"}} {
		if out, err := exec.Command(tare, args...).CombinedOutput(); err != nil {
			return fmt.Errorf("tare %v: %w\n%s", args, err, out)
		}
	}
	start := time.Now()
	cmd := exec.Command(tare, "datapath", "net", "--kubeconfig", filepath.Join(dir, "kubeconfig"), "--lab-dir", dir, "-o", "json")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("tare datapath net: %w", err)
	}
	took := time.Since(start)
	var r netpath.Report
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		return err
	}
	fmt.Printf("tare datapath net, defaults, on a two-node lab: %s (goal: under 10 minutes)\n", took.Round(time.Second))
	for p, why := range r.Skipped {
		fmt.Printf("  not measured: %s: %s\n", p, why)
	}
	fmt.Println("\nratios against the host (interval width = high − low):")
	for _, x := range r.Ratios {
		if x.Metric != "gbps" && x.Metric != "p50_us" {
			continue
		}
		fmt.Printf("  %-15s vs %-15s %-10s %6d  %-6s %.3f [%.3f, %.3f] width %.3f  p=%.4f sig=%v\n",
			x.Path, x.Against, x.Mode, x.Size, x.Metric, x.Ratio, x.Lo, x.Hi, x.Hi-x.Lo, x.P, x.Significant)
	}
	fmt.Println("\nsmallest difference n + n trials detect at the host path (80% power, α = 0.05, from the host trials' noise):")
	groups := map[string][]float64{}
	var keys []string
	for _, t := range r.Trials {
		if t.Error != "" || t.Lane.Path != netpath.Host || t.Lane.Copy > 1 {
			continue
		}
		v := t.Gbps
		if t.Lane.Mode == netpath.TCPRR {
			v = t.P50us
		}
		if v > 0 {
			k := fmt.Sprintf("%s %s", t.Lane.Mode, datapath.FormatSize(t.Lane.Size))
			if _, ok := groups[k]; !ok {
				keys = append(keys, k)
			}
			groups[k] = append(groups[k], math.Log(v))
		}
	}
	for _, k := range keys {
		logs := groups[k]
		sd := stat.StdDev(logs, nil)
		mde := stats.MDE(len(logs), len(logs), sd, datapath.Alpha)
		fmt.Printf("  %-18s n=%d  sd of log %.4f  → %.1f%%\n", k, len(logs), sd, 100*(math.Exp(mde)-1))
	}
	return nil
}
