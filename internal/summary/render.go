package summary

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/tare-dev/tare/internal/output"
)

// JSON writes the summary as indented JSON.
func (s Summary) JSON(w io.Writer) error {
	return output.JSON(w, s)
}

// Table writes the summary for people, kubectl style.
func (s Summary) Table(w io.Writer) error {
	ew := &errWriter{w: w}
	s.tableNode(ew)
	if s.Window.Intervals > 0 {
		s.tableGroups(ew)
		s.tableProcesses(ew)
		s.tableChildren(ew)
		s.tableBlockIO(ew)
		s.tableSelf(ew)
		s.tableReconcile(ew)
	}
	for _, l := range s.Meta.Limitations {
		ew.printf("limitation: %s\n", l)
	}
	for _, w := range s.Warnings {
		ew.printf("warning: %s\n", w.Message)
	}
	return ew.err
}

type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, a ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, a...)
	}
}

func (s Summary) tableNode(w *errWriter) {
	m := s.Meta
	w.printf("NODE %s  kernel %s  %d CPUs  window %.1fs (%d intervals of %s)  cpu source %s, short-lived %s\n",
		m.Host, m.Kernel, s.Node.CPUs, s.Window.Seconds, s.Window.Intervals, m.Interval, m.CPUSource, m.ExitSource)
	if m.Interrupted {
		w.printf("interrupted: the summary covers what was measured before Ctrl-C\n")
	}
	if s.Window.Intervals == 0 {
		return
	}
	n := s.Node
	w.printf("CPU busy %.0fm (%.1f%% of all cores)  p95 %.0fm  max %.0fm  n=%d  from %s\n", n.Busy.Mean, n.BusyPercent, n.Busy.P95, n.Busy.Max, n.Busy.N, n.Reference)
	w.printf("  /proc/stat busy %.0fm: user %.0fm  nice %.0fm  system %.0fm  irq %.0fm  softirq %.0fm  steal %.0fm  |  iowait %.0fm  idle %.0fm\n",
		n.ProcStatBusy, n.Split["user"], n.Split["nice"], n.Split["system"], n.Split["irq"], n.Split["softirq"], n.Split["steal"], n.Iowait, n.Idle)
	w.printf("  %s\n", BusyDefinition)
	w.printf("load average %.2f %.2f %.2f (mean load1 %.2f)", n.Load[0], n.Load[1], n.Load[2], n.LoadMean1)
	if len(n.Pressure) > 0 {
		var parts []string
		for _, res := range []string{"cpu", "memory", "io"} {
			if p, ok := n.Pressure[res]; ok {
				parts = append(parts, fmt.Sprintf("%s some %.2f%% full %.2f%%", res, p.SomePercent, p.FullPercent))
			}
		}
		w.printf("  pressure: %s", strings.Join(parts, ", "))
	}
	w.printf("\n  note: %s\n", EffortNote)
}

func (s Summary) tableGroups(w *errWriter) {
	w.printf("\n")
	tw := tabwriter.NewWriter(w.w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "GROUP\tKIND\tPROCS\tCPU(m)\tP95(m)\tMAX(m)\tCHILDREN(m)\tSHARE\tRSS\tPSS\tPRIVATE\tREAD/s\tWRITE/s\tTHREADS")
	for _, g := range s.Groups {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f%%\t%s\t%s\t%s\t%s\t%s\t%d\n", g.Name, g.Kind, g.Processes,
			g.CPU.Mean, g.CPU.P95, g.CPU.Max, g.ChildrenCPU, g.SharePct, output.Bytes(g.RSS), output.Bytes(g.PSS), output.Bytes(g.Private),
			output.Bytes(g.ReadBps), output.Bytes(g.WriteBps), g.Threads)
	}
	w.err = firstErr(w.err, tw.Flush())
}

func (s Summary) tableProcesses(w *errWriter) {
	procs := s.Processes
	w.printf("\nPROCESSES (top %d of %d by CPU incl. short-lived children; mean over the window)\n", min(s.top, len(procs)), len(procs))
	tw := tabwriter.NewWriter(w.w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PID\tGROUP\tCPU(m)\tP95(m)\tMAX(m)\tCHILDREN(m)\tRSS\tPSS\tPRIVATE\tREAD/s\tWRITE/s\tTHREADS\tCOMMAND")
	for _, p := range procs[:min(s.top, len(procs))] {
		fmt.Fprintf(tw, "%d\t%s\t%.1f\t%.1f\t%.1f\t%.1f\t%s\t%s\t%s\t%s\t%s\t%d\t%s%s\n", p.PID, p.Group, p.CPU.Mean, p.CPU.P95, p.CPU.Max,
			p.ChildrenCPU, output.Bytes(p.RSS), output.Bytes(p.PSS), output.Bytes(p.Private), output.Bytes(p.ReadBps), output.Bytes(p.WriteBps), p.Threads,
			lifeMark(p), Clip(p.Cmdline, 100))
	}
	w.err = firstErr(w.err, tw.Flush())
}

func lifeMark(p Process) string {
	switch {
	case p.Started && p.Exited:
		return "(started+ended) "
	case p.Started:
		return "(started) "
	case p.Exited:
		return "(ended) "
	}
	return ""
}

func (s Summary) tableChildren(w *errWriter) {
	if len(s.Children) == 0 {
		return
	}
	w.printf("\nSHORT-LIVED CHILDREN (started and ended in the window; credited to the long-lived process that spawned them)\n")
	tw := tabwriter.NewWriter(w.w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PARENT\tGROUP\tRUNS\tPER-MIN\tPERIOD\tCPU(m)\tCPU/RUN\tSHARE\tCOMMAND")
	for _, c := range s.Children[:min(s.top, len(s.Children))] {
		period := "-"
		if c.PeriodSeconds > 0 {
			period = fmt.Sprintf("%.1fs", c.PeriodSeconds)
		}
		fmt.Fprintf(tw, "%d %s\t%s\t%d\t%.1f\t%s\t%.1f\t%.1fms\t%.1f%%\t%s\n", c.ParentPID, Clip(c.ParentCmdline, 30), c.Group,
			c.Runs, c.PerMinute, period, c.CPU, c.CPUPerRunMs, c.SharePct, Clip(c.Cmdline, 80))
	}
	w.err = firstErr(w.err, tw.Flush())
}

func (s Summary) tableSelf(w *errWriter) {
	if s.Self == nil {
		return
	}
	p := s.Self
	w.printf("\nTARE ITSELF (not in any group)  cpu %.1fm  p95 %.1fm  max %.1fm  rss %s  pss %s  private %s  threads %d\n",
		p.CPU.Mean, p.CPU.P95, p.CPU.Max, output.Bytes(p.RSS), output.Bytes(p.PSS), output.Bytes(p.Private), p.Threads)
	s.tableSelfBPF(w)
}

func (s Summary) tableReconcile(w *errWriter) {
	r := s.Reconcile
	w.printf("\nRECONCILIATION  %s\n", r.Explanation)
	switch {
	case r.WithinTolerance && r.IRQ > 0:
		// The bound is wider than the resolution the explanation prints: say which, or an unattributed
		// figure beyond ±resolution would read as a contradiction.
		lo, hi := r.tolerance()
		w.printf("  unattributed %.1fm within tolerance: yes (%.1fm to +%.1fm: the ±%.1fm resolution, plus the %.1fm of irq time no process holds)\n",
			r.Unattributed, lo, hi, r.Resolution, r.IRQ)
	case r.WithinTolerance:
		w.printf("  unattributed within resolution: yes\n")
	}
	for _, x := range r.Warnings {
		w.printf("  warning (%s): %s\n", x.Figure, x)
	}
	if s.Filter != "" {
		w.printf("  filter %q applies to the tables only; node totals and reconciliation cover every process\n", s.Filter)
	}
}

// Clip shortens s to n bytes, marking the cut with an ellipsis.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}

func firstErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// GroupNames lists the group names, sorted, for tests and completion.
func (s Summary) GroupNames() []string {
	names := make([]string, 0, len(s.Groups))
	for _, g := range s.Groups {
		names = append(names, g.Name)
	}
	sort.Strings(names)
	return names
}
