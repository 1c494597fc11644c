package promread

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/tare-dev/tare/internal/output"
)

// JSON writes the report as indented JSON: every group and pod, CPU in cores, memory in bytes.
func (r Report) JSON(w io.Writer) error {
	return output.JSON(w, r)
}

// Table writes the report for people: one row per node, each node's busiest groups, then the cluster.
func (r Report) Table(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Prometheus %s, CPU averaged over %s until %s\n\n", r.Prometheus, r.Window, r.Time.Format(time.RFC3339))
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tCPUS\tBUSY (cores)\tBUSY (% of CPUs)\tOVERHEAD (cores)\tKUBELET+RUNTIME\tTARE (cores)")
	for _, n := range r.Nodes {
		fmt.Fprintf(tw, "%s\t%g\t%.3f\t%.1f%%\t%.3f\t%.3f\t%.3f\n", nodeName(n.Name), n.CPUs, n.BusyCores, n.BusyPercent,
			n.OverheadCores, n.KubeletRuntimeCores, n.TareCores)
	}
	_ = tw.Flush()
	for _, n := range r.Nodes {
		fmt.Fprintf(&b, "\nBusiest groups on %s\n", nodeName(n.Name))
		tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "GROUP\tKIND\tCPU (cores)\tRSS\tPSS\tPRIVATE")
		groups, more := limit(n.Groups, r.Top)
		for _, g := range groups {
			fmt.Fprintf(tw, "%s\t%s\t%.3f\t%s\t%s\t%s\n", g.Name, g.Kind, g.CPUCores,
				mib(g.Memory, "rss"), mib(g.Memory, "pss"), mib(g.Memory, "private"))
		}
		_ = tw.Flush()
		if more > 0 {
			fmt.Fprintf(&b, "(%d more groups: -o json lists every one)\n", more)
		}
	}
	c := r.Cluster
	fmt.Fprintf(&b, "\nCluster (%s): busy %.3f cores, overhead %.3f cores, control plane %.3f cores\n",
		plural(c.Nodes, "node"), c.BusyCores, c.OverheadCores, c.ControlPlaneCores)
	if len(c.Pods) > 0 {
		tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "POD\tNODE\tCPU (cores)")
		pods, more := limit(c.Pods, r.Top)
		for _, p := range pods {
			fmt.Fprintf(tw, "%s/%s\t%s\t%.3f\n", p.Namespace, p.Pod, nodeName(p.Node), p.CPUCores)
		}
		_ = tw.Flush()
		if more > 0 {
			fmt.Fprintf(&b, "(%d more pods: -o json lists every one)\n", more)
		}
	}
	for _, warn := range r.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", warn.Message)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func limit[T any](s []T, top int) ([]T, int) {
	if top <= 0 || len(s) <= top {
		return s, 0
	}
	return s[:top], len(s) - top
}

func nodeName(n string) string {
	if n == "" {
		return "(no node label)"
	}
	return n
}

func mib(m map[string]int64, kind string) string {
	v, ok := m[kind]
	if !ok {
		return "-"
	}
	return output.MiBFixed(float64(v), 1)
}
