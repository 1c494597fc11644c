package datapath

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/tare-dev/tare/internal/htmlreport"
	"github.com/tare-dev/tare/internal/output"
	"github.com/tare-dev/tare/internal/stats"
)

// WriteTable writes a run's result: how it ran, what it could not measure and which trials failed (a
// disk run's targets before them); then per group a row per lane with its medians and, against its
// baseline, the ratio with its interval and p-value; then the differences in words, the warnings, and
// where the CPU went.
func WriteTable(w io.Writer, r Result) error {
	remote := ""
	if r.RemoteNode != "" {
		remote = ", second node " + r.RemoteNode
	}
	fmt.Fprintf(w, "Node %s%s: %s, took %s\n", orDash(r.Node), remote, r.Setup, r.Took)
	if r.PathMTU != "" {
		fmt.Fprintf(w, "Path MTU: %s\n", r.PathMTU)
	}
	for _, s := range r.Skipped {
		fmt.Fprintf(w, "Not measured: %s\n", s)
	}
	if r.Targets != nil {
		if err := targetsTable(w, r.Targets); err != nil {
			return err
		}
	}
	if r.Failed != "" {
		fmt.Fprintf(w, "Failed trials (left out): %s\n", r.Failed)
	}
	if r.FailedTransactions != "" {
		fmt.Fprintf(w, "Failed transactions (left out of the trials' figures): %s\n", r.FailedTransactions)
	}
	ratios := map[[3]string]Comparison{}
	for _, c := range r.Comparisons {
		if c.Baseline {
			ratios[[3]string{c.Lane, c.Subject, c.Metric}] = c
		}
	}
	for _, g := range r.Groups {
		if err := groupTable(w, r, g, ratios); err != nil {
			return err
		}
	}
	if words := Words(r); len(words) > 0 {
		fmt.Fprintf(w, "\nIn words (node CPU per %s, the node's own idle work included; each p is one comparison's):\n", r.WorkUnit)
		for _, s := range words {
			fmt.Fprintln(w, "  "+s)
		}
	}
	for _, x := range r.Warnings {
		fmt.Fprintln(w, x.Note())
	}
	if r.CPU != nil {
		return cpuTable(w, r.CPU)
	}
	return nil
}

// groupTable writes one group: its head, with the level of its intervals and a note when its trials are
// too few for any p to be significant, and a row per lane; ratios are the comparisons with each lane's
// baseline, by lane, subject and figure.
func groupTable(w io.Writer, r Result, g Group, ratios map[[3]string]Comparison) error {
	level, minP := 0.0, 0.0
	for _, c := range r.Comparisons {
		if c.Subject == g.Subject && c.Baseline {
			level, minP = c.Level, c.MinP
			break
		}
	}
	fmt.Fprintf(w, "\n%s (ratios: %s ÷ %s%s, Hodges–Lehmann with its %.1f%% interval; p: Mann–Whitney, * below %.2f)\n",
		g.Name, r.Lane, g.Versus, g.VersusNote, 100*level, Alpha)
	if minP >= Alpha {
		fmt.Fprintf(w, "  with these few trials no p can fall below %.3f: nothing can be significant (use --trials 4 or more)\n", minP)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	head := []string{strings.ToUpper(r.Lane), "N"}
	for _, f := range g.Figures {
		head = append(head, f.Title)
		if !f.NoRatio {
			head = append(head, "vs "+g.Versus, "p")
		}
	}
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for _, l := range g.Lanes {
		cells := []string{l.Label, fmt.Sprint(l.N)}
		for i, f := range g.Figures {
			cells = append(cells, output.Figure(stats.MedianOf(l.Values[i])))
			if f.NoRatio {
				continue
			}
			if q, ok := ratios[[3]string{l.Label, g.Subject, f.Name}]; ok {
				cells = append(cells, fmt.Sprintf("%.3f [%.3f, %.3f]", q.Ratio, q.Lo, q.Hi), fmtSig(q.Shift))
			} else {
				cells = append(cells, "—", "")
			}
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}

// Words says what each lane costs against the lane it is compared with, in the terms of its group's main
// figure and its CPU per unit of work, and whether each difference is significant (each comparison
// alone, at Alpha: among the run's many comparisons one in twenty differs by chance).
func Words(r Result) []string {
	perWork := map[[3]string]Comparison{}
	for _, c := range r.Comparisons {
		if c.PerWork != "" {
			perWork[[3]string{c.Lane, c.Against, c.Subject}] = c
		}
	}
	var out []string
	for _, c := range r.Comparisons {
		if c.Words == "" {
			continue
		}
		s := fmt.Sprintf("%s against %s, %s: %+.1f%% %s [%+.1f%%, %+.1f%%], p = %.3g", c.Lane, c.Against, c.Subject,
			100*(c.Ratio-1), c.Words, 100*(c.Lo-1), 100*(c.Hi-1), c.P)
		if !c.Significant {
			s += " (not significant)"
		}
		if cpu, ok := perWork[[3]string{c.Lane, c.Against, c.Subject}]; ok {
			s += fmt.Sprintf("; %+.3g CPU-s per %s (%+.1f%%%s)", cpu.Median-cpu.Base, cpu.PerWork, 100*(cpu.Ratio-1), sigWord(cpu.Shift))
		}
		out = append(out, s)
	}
	return out
}

// targetsTable lists a disk run's targets: file, file system, device (and whether it is the host
// target's), direct or buffered I/O.
func targetsTable(w io.Writer, targets []htmlreport.DatapathTarget) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TARGET\tFILE\tFS\tDEVICE\tI/O")
	for _, t := range targets {
		dev := t.Device
		if t.FSType == "overlay" {
			dev = "overlay " + dev + ", upper layer"
		}
		same := "same as host"
		if !t.SameDevice {
			same = "NOT the host's"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s %s\t%s\n", t.Target, t.File, t.FSType, dev, same, t.IO)
	}
	return tw.Flush()
}

// cpuTable shows, per lane, the groups that spent the most CPU per unit of work (medians over trials).
func cpuTable(w io.Writer, rows []CPURow) error {
	fmt.Fprintln(w, "\nWhere the CPU went (CPU-s per unit of work, median over trials; the five largest groups)")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PATH\tMODE\tSIZE\tNODE\tGROUPS")
	for _, r := range rows {
		var parts []string
		for _, g := range r.Groups[:min(5, len(r.Groups))] {
			parts = append(parts, fmt.Sprintf("%s %s", g.Name, output.Figure(g.Value)))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s per %s\t%s\n", r.Lane, r.Mode, r.Size, output.Figure(r.Node), r.Unit, strings.Join(parts, ", "))
	}
	return tw.Flush()
}

// fmtSig is a p-value with a star when significant.
func fmtSig(q Shift) string {
	s := fmt.Sprintf("%.3g", q.P)
	if q.Significant {
		s += " *"
	}
	return s
}

func sigWord(r Shift) string {
	if r.Significant {
		return fmt.Sprintf(", p = %.3g", r.P)
	}
	return ", not significant"
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}
