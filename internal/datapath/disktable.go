package datapath

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/tare-dev/tare/internal/output"
	"github.com/tare-dev/tare/internal/stats"
)

// DiskTable writes a disk run: its targets (file system, device, direct or buffered I/O), then per
// pattern, block size and depth a row per target with its medians and, against the host, the ratio with
// its interval and p-value; then the differences in words.
func DiskTable(w io.Writer, r DiskReport) error {
	fmt.Fprintf(w, "Node %s: %d round(s) of %s fio trials in shuffled order (--seed %d), one %d MiB file per target, took %s\n",
		orDash(r.Node), r.Rounds, r.Duration, r.Seed, r.Size>>20, r.Took)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TARGET\tFILE\tFS\tDEVICE\tI/O")
	for _, t := range r.Targets {
		dev := t.Device
		if t.FSType == "overlay" {
			dev = "overlay " + dev + ", upper layer"
		}
		same := "same as host"
		if !t.SameDevice {
			same = "NOT the host's"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s %s\t%s\n", t.Target, t.File, t.FSType, dev, same, t.IO())
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if failed := diskFailures(r.Trials); failed != "" {
		fmt.Fprintf(w, "Failed trials (left out): %s\n", failed)
	}
	ratios := map[string]DiskRatio{}
	for _, x := range r.Ratios {
		ratios[x.Target+"|"+x.Metric+"|"+groupName(x.RW, x.BS, x.IODepth)] = x
	}
	for _, g := range diskGroups(r.Lanes) {
		l0 := g[0]
		name := groupName(l0.RW, l0.BS, l0.IODepth)
		level, minP := 0.0, 0.0
		for _, x := range r.Ratios {
			if groupName(x.RW, x.BS, x.IODepth) == name {
				level, minP = x.Level, x.MinP
				break
			}
		}
		fmt.Fprintf(w, "\n%s (ratios: target ÷ %s, Hodges–Lehmann with its %.1f%% interval; p: Mann–Whitney, * below %.2f)\n", name, r.Baseline, 100*level, Alpha)
		if minP >= Alpha {
			fmt.Fprintf(w, "  with these few trials no p can fall below %.3f: nothing can be significant (use --trials 4 or more)\n", minP)
		}
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		head := []string{"TARGET", "N"}
		for _, m := range diskMetrics {
			head = append(head, m.Title)
			if m.Name != sameAsIOPS {
				head = append(head, "vs "+r.Baseline, "p")
			}
		}
		fmt.Fprintln(tw, strings.Join(head, "\t"))
		for _, l := range g {
			ts := diskTrialsOf(r.Trials, l)
			cells := []string{l.Label(), fmt.Sprint(len(ts))}
			for _, m := range diskMetrics {
				cells = append(cells, output.Figure(stats.MedianOf(valuesOf(ts, m))))
				if m.Name == sameAsIOPS {
					continue
				}
				if q, ok := ratios[l.Label()+"|"+m.Name+"|"+name]; ok {
					cells = append(cells, fmt.Sprintf("%.3f [%.3f, %.3f]", q.Ratio, q.Lo, q.Hi), fmtSig(q.Shift))
				} else {
					cells = append(cells, "—", "")
				}
			}
			fmt.Fprintln(tw, strings.Join(cells, "\t"))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if words := DiskWords(r); len(words) > 0 {
		fmt.Fprintln(w, "\nIn words (node CPU per 10,000 I/Os, the node's own idle work included; each p is one comparison's):")
		for _, s := range words {
			fmt.Fprintln(w, "  "+s)
		}
	}
	return nil
}

// DiskWords says what each target costs against the host: IOPS and the CPU per 10,000 I/Os, and whether
// each difference is significant (each comparison alone, at Alpha).
func DiskWords(r DiskReport) []string {
	cpu := map[string]DiskRatio{}
	for _, x := range r.Ratios {
		if x.Metric == "cpu_per_10k_io" {
			cpu[x.Target+"|"+groupName(x.RW, x.BS, x.IODepth)] = x
		}
	}
	var out []string
	for _, x := range r.Ratios {
		if x.Metric != "iops" {
			continue
		}
		g := groupName(x.RW, x.BS, x.IODepth)
		s := fmt.Sprintf("%s against %s, %s: %+.1f%% IOPS [%+.1f%%, %+.1f%%], p = %.3g", x.Target, x.Against, g, 100*(x.Ratio-1), 100*(x.Lo-1), 100*(x.Hi-1), x.P)
		if !x.Significant {
			s += " (not significant)"
		}
		if c, ok := cpu[x.Target+"|"+g]; ok {
			s += fmt.Sprintf("; %+.3g CPU-s per 10k I/Os (%+.1f%%%s)", c.Median-c.Base, 100*(c.Ratio-1), sigWord(c.Shift))
		}
		out = append(out, s)
	}
	return out
}

// sameAsIOPS is the figure whose ratio the table leaves out: with one block size it is IOPS's (the JSON
// has it).
const sameAsIOPS = "mb_per_s"

func groupName(rw RW, bs, depth int) string {
	return fmt.Sprintf("%s %s qd%d", rw, FormatSize(bs), depth)
}

func diskGroups(lanes []DiskLane) [][]DiskLane {
	return runsOf(lanes, func(a, b DiskLane) bool { return a.group() == b.group() })
}

func diskTrialsOf(ts []DiskTrial, l DiskLane) []DiskTrial {
	return keep(ts, func(t DiskTrial) bool { return t.Error == "" && t.Lane == l })
}

func diskFailures(ts []DiskTrial) string {
	var out []string
	for _, t := range ts {
		if t.Error != "" {
			out = append(out, fmt.Sprintf("#%d %s %s: %s", t.Seq, t.Lane.Label(), groupName(t.Lane.RW, t.Lane.BS, t.Lane.IODepth), t.Error))
		}
	}
	return strings.Join(out, "; ")
}
