package datapath

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/tare-dev/tare/internal/output"
	"github.com/tare-dev/tare/internal/stats"
)

// Table writes the run: per mode and size a row per path with its medians and, against the host, the
// ratio with its interval and p-value; then the differences in words, and where the CPU went.
func Table(w io.Writer, r Report) error {
	remote := ""
	if r.RemoteNode != "" {
		remote = ", second node " + r.RemoteNode
	}
	fmt.Fprintf(w, "Node %s%s: %d round(s) of %s trials in shuffled order (--seed %d), %d stream(s), took %s\n",
		orDash(r.Node), remote, r.Rounds, r.Duration, r.Seed, r.Parallel, r.Took)
	if mtus := pathMTUs(r); mtus != "" {
		fmt.Fprintf(w, "Path MTU: %s\n", mtus)
	}
	for _, p := range slices.Sorted(maps.Keys(r.Skipped)) {
		fmt.Fprintf(w, "Not measured: %s: %s\n", p, r.Skipped[p])
	}
	if failed := failures(r.Trials); failed != "" {
		fmt.Fprintf(w, "Failed trials (left out): %s\n", failed)
	}
	if failed := failedTransactions(r.Trials); failed != "" {
		fmt.Fprintf(w, "Failed transactions (left out of the trials' figures): %s\n", failed)
	}
	ratios := map[string]Ratio{}
	for _, x := range r.Ratios {
		if x.Against == r.baselineOf(x.Path) {
			ratios[fmt.Sprintf("%s|%s|%d|%s", x.Path, x.Mode, x.Size, x.Metric)] = x
		}
	}
	for _, g := range lanesByModeSize(r.Lanes) {
		m := g[0].Mode
		level, minP := 0.0, 0.0
		for _, x := range r.Ratios {
			if x.Mode == m && x.Size == g[0].Size && x.Against == r.baselineOf(x.Path) {
				level, minP = x.Level, x.MinP
				break
			}
		}
		versus, byPath := r.Baseline, ""
		if bs := r.groupBaselines(g); len(bs) > 1 {
			versus, byPath = "baseline", "; the cross-node paths ÷ "+string(HostCrossNode)+", the others ÷ "+r.Baseline
		}
		fmt.Fprintf(w, "\n%s, %s messages (ratios: path ÷ %s%s, Hodges–Lehmann with its %.1f%% interval; p: Mann–Whitney, * below %.2f)\n",
			m, FormatSize(g[0].Size), versus, byPath, 100*level, Alpha)
		if minP >= Alpha {
			fmt.Fprintf(w, "  with these few trials no p can fall below %.3f: nothing can be significant (use --trials 4 or more)\n", minP)
		}
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		metrics := metricsOf(m)
		head := []string{"PATH", "N"}
		for _, x := range metrics {
			head = append(head, x.Title, "vs "+versus, "p")
		}
		fmt.Fprintln(tw, strings.Join(head, "\t"))
		for _, l := range g {
			ts := trialsOf(r.Trials, l)
			cells := []string{l.Label(), fmt.Sprint(len(ts))}
			for _, x := range metrics {
				cells = append(cells, output.Figure(stats.MedianOf(valuesOf(ts, x))))
				if q, ok := ratios[fmt.Sprintf("%s|%s|%d|%s", l.Label(), l.Mode, l.Size, x.Name)]; ok {
					cells = append(cells, fmt.Sprintf("%.3f [%.3f, %.3f]", q.Ratio, q.Lo, q.Hi), fmtP(q))
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
	if words := Words(r); len(words) > 0 {
		fmt.Fprintln(w, "\nIn words (node CPU per unit of work, the node's own idle work included; each p is one comparison's):")
		for _, s := range words {
			fmt.Fprintln(w, "  "+s)
		}
	}
	for _, x := range r.Warnings {
		fmt.Fprintln(w, x.Note())
	}
	return groupsTable(w, r)
}

// Words says what each path costs against the path it is compared with, in the terms of its mode's main
// figure and its CPU per unit of work, and whether each difference is significant (each comparison
// alone, at Alpha: among the run's many comparisons one in twenty differs by chance).
func Words(r Report) []string {
	by := map[string]Ratio{}
	for _, x := range r.Ratios {
		by[fmt.Sprintf("%s|%s|%s|%d|%s", x.Path, x.Against, x.Mode, x.Size, x.Metric)] = x
	}
	var out []string
	for _, x := range r.Ratios {
		main := "gbps"
		what := "throughput"
		if !x.Mode.Stream() {
			main, what = "p50_us", "p50 latency"
		}
		if x.Metric != main {
			continue
		}
		s := fmt.Sprintf("%s against %s, %s %s: %+.1f%% %s [%+.1f%%, %+.1f%%], p = %.3g", x.Path, x.Against, x.Mode, FormatSize(x.Size),
			100*(x.Ratio-1), what, 100*(x.Lo-1), 100*(x.Hi-1), x.P)
		if !x.Significant {
			s += " (not significant)"
		}
		if c, ok := by[fmt.Sprintf("%s|%s|%s|%d|cpu_per_unit", x.Path, x.Against, x.Mode, x.Size)]; ok {
			s += fmt.Sprintf("; %+.3g CPU-s per %s (%+.1f%%%s)", c.Median-c.Base, x.Mode.Unit(), 100*(c.Ratio-1), sigWord(c.Shift))
		}
		out = append(out, s)
	}
	return out
}

// groupsTable shows, per lane, the groups that spent the most CPU per unit of work (medians over trials).
func groupsTable(w io.Writer, r Report) error {
	if len(r.Trials) == 0 {
		return nil
	}
	fmt.Fprintln(w, "\nWhere the CPU went (CPU-s per unit of work, median over trials; the five largest groups)")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PATH\tMODE\tSIZE\tNODE\tGROUPS")
	for _, l := range r.Lanes {
		ts := trialsOf(r.Trials, l)
		if len(ts) == 0 {
			continue
		}
		per := map[string][]float64{}
		for _, t := range ts {
			for g, mc := range t.Groups {
				per[g] = append(per[g], t.perUnit(mc))
			}
		}
		type gv struct {
			name string
			v    float64
		}
		var gs []gv
		for g, vs := range per {
			gs = append(gs, gv{g, stats.MedianOf(vs)})
		}
		slices.SortFunc(gs, func(a, b gv) int {
			if a.v != b.v {
				return -cmp.Compare(a.v, b.v)
			}
			return strings.Compare(a.name, b.name)
		})
		var parts []string
		for i, g := range gs {
			if i == 5 {
				break
			}
			parts = append(parts, fmt.Sprintf("%s %s", g.name, output.Figure(g.v)))
		}
		node := stats.MedianOf(valuesOf(ts, Metric{value: func(t Trial) float64 { return t.CPUPerUnit }}))
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s per %s\t%s\n", l.Label(), l.Mode, FormatSize(l.Size), output.Figure(node), l.Mode.Unit(), strings.Join(parts, ", "))
	}
	return tw.Flush()
}

func lanesByModeSize(lanes []Lane) [][]Lane {
	return runsOf(lanes, func(a, b Lane) bool { return a.Mode == b.Mode && a.Size == b.Size })
}

func trialsOf(ts []Trial, l Lane) []Trial {
	return keep(ts, func(t Trial) bool { return t.Error == "" && t.Lane == l })
}

func failures(ts []Trial) string {
	var out []string
	for _, t := range ts {
		if t.Error != "" {
			out = append(out, fmt.Sprintf("#%d %s %s %s: %s", t.Seq, t.Lane.Label(), t.Lane.Mode, FormatSize(t.Lane.Size), t.Error))
		}
	}
	return strings.Join(out, "; ")
}

// baselineOf is the baseline of the lane labelled label (Baselines; Baseline for a report without them).
func (r Report) baselineOf(label string) string {
	if b, ok := r.Baselines[label]; ok {
		return b
	}
	return r.Baseline
}

// groupBaselines are the distinct baselines of lanes g.
func (r Report) groupBaselines(g []Lane) map[string]bool {
	out := map[string]bool{}
	for _, l := range g {
		if l.Label() != r.Baseline {
			out[r.baselineOf(l.Label())] = true
		}
	}
	return out
}

// pathMTUs lists each path's MTU as its trials ran, once per path label ("" when no trial knows it).
func pathMTUs(r Report) string {
	mtu := map[string]int{}
	for _, t := range r.Trials {
		if t.PathMTU > 0 {
			mtu[t.Lane.Label()] = t.PathMTU
		}
	}
	var out []string
	seen := map[string]bool{}
	for _, l := range r.Lanes {
		if m, ok := mtu[l.Label()]; ok && !seen[l.Label()] {
			seen[l.Label()] = true
			out = append(out, fmt.Sprintf("%s %d", l.Label(), m))
		}
	}
	return strings.Join(out, ", ")
}

// failedTransactions lists the trials some of whose transactions failed (tcp-crr), with the first error.
func failedTransactions(ts []Trial) string {
	var out []string
	for _, t := range ts {
		if t.Error == "" && t.Failed > 0 {
			out = append(out, fmt.Sprintf("#%d %s %s %s: %d (%s)", t.Seq, t.Lane.Label(), t.Lane.Mode, FormatSize(t.Lane.Size), t.Failed, t.FailedWhy))
		}
	}
	return strings.Join(out, "; ")
}

func fmtP(q Ratio) string { return fmtSig(q.Shift) }

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
