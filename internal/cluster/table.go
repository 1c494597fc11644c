package cluster

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/tare-dev/tare/internal/output"
)

// JSON writes the view as indented JSON.
func (v View) JSON(w io.Writer) error {
	return output.JSON(w, v)
}

// Table writes the view for people, kubectl style: CPU per node and category, memory likewise, the
// cluster's totals, then the nodes that could not be measured and the notes.
func (v View) Table(w io.Writer) error {
	var b strings.Builder
	cats := v.shownCategories()
	fmt.Fprintf(&b, "Cluster over a %s window at %s: %d nodes, %d measured on %d kernels, %d CPUs, %d running pods\n\n",
		v.Window, v.Taken.Format("15:04:05"), v.Totals.Nodes, v.Totals.Measured, v.Totals.Kernels, v.Totals.CPUs, v.Totals.Pods)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := []string{"NODE", "STATUS", "CPUS", "PODS", "BUSY", "P95", "N"}
	for _, c := range cats {
		head = append(head, strings.ToUpper(strings.ReplaceAll(c.Title(), " ", "-")))
	}
	head = append(head, "PER-POD")
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	for _, n := range v.Nodes {
		cols := []string{n.Name, string(n.Status)}
		if n.Status != StatusOK {
			fmt.Fprintln(tw, strings.Join(cols, "\t")+"\t")
			continue
		}
		cols = append(cols, fmt.Sprint(n.CPUs), fmt.Sprint(n.Pods), output.Millicores(n.Busy.Mean), output.Millicores(n.Busy.P95), fmt.Sprint(n.Busy.N))
		for _, c := range cats {
			cols = append(cols, output.Millicores(n.CPU[c]))
		}
		cols = append(cols, output.Millicores(n.PerPod.CPU))
		fmt.Fprintln(tw, strings.Join(cols, "\t")+"\t")
	}
	cols := []string{"CLUSTER", fmt.Sprintf("%d/%d", v.Totals.Measured, v.Totals.Nodes), fmt.Sprint(v.Totals.CPUs), fmt.Sprint(v.Totals.Pods), output.Millicores(v.Totals.Busy), "", ""}
	for _, c := range cats {
		cols = append(cols, output.Millicores(v.Totals.CPU[c]))
	}
	cols = append(cols, output.Millicores(v.Totals.PerPod.CPU))
	fmt.Fprintln(tw, strings.Join(cols, "\t")+"\t")
	_ = tw.Flush()

	fmt.Fprintln(&b, "\nMemory (PSS, else RSS)")
	tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	head = []string{"NODE"}
	for _, c := range cats {
		if c != Unattributed {
			head = append(head, strings.ToUpper(strings.ReplaceAll(c.Title(), " ", "-")))
		}
	}
	head = append(head, "PER-POD")
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	memRow := func(name string, m map[Category]float64, per float64) {
		cols := []string{name}
		for _, c := range cats {
			if c != Unattributed {
				cols = append(cols, output.Bytes(m[c]))
			}
		}
		cols = append(cols, output.Bytes(per))
		fmt.Fprintln(tw, strings.Join(cols, "\t")+"\t")
	}
	for _, n := range v.Nodes {
		if n.Status == StatusOK {
			memRow(n.Name, n.Memory, n.PerPod.Memory)
		}
	}
	memRow("CLUSTER", v.Totals.Memory, v.Totals.PerPod.Memory)
	_ = tw.Flush()

	var notes []string
	for _, n := range v.Nodes {
		if n.Status != StatusOK {
			notes = append(notes, fmt.Sprintf("%s not measured (%s): %s", n.Name, n.Status, n.Reason))
		}
	}
	for _, sk := range v.SharedKernels {
		notes = append(notes, sk.Note())
	}
	for _, n := range v.Nodes {
		for _, w := range n.Warnings {
			notes = append(notes, n.Name+": "+w.Note())
		}
		for _, l := range n.Limitations {
			notes = append(notes, n.Name+": "+l)
		}
	}
	notes = append(notes, fmt.Sprintf("CPU in millicores, means over each node's window (N intervals; P95 of node busy per interval); "+
		"the cluster's figures resolve to ±%s. Per-pod: the pod runtime's processes (shims, pause, runc, CNI) per running pod.", output.Millicores(v.Totals.Resolution)))
	fmt.Fprintln(&b, "\nNotes:")
	for _, n := range notes {
		fmt.Fprintln(&b, "  - "+n)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Note says what sharing a kernel means for the figures.
func (sk SharedKernel) Note() string {
	s := fmt.Sprintf("%s share one kernel (boot ID %s): their node busy is the machine's and counts once in the cluster's", strings.Join(sk.Nodes, ", "), sk.BootID)
	if sk.SharedProcesses {
		s += "; they also share a PID namespace, so each agent sees every node's processes outside pods (control plane, kubelets, runtimes, kernel threads): " +
			"those count once in the cluster's figures, and each node's pods are told apart by their kubelet's cgroup"
	}
	return s
}

// shownCategories are the categories with a figure on some node: other nodes' pods only where nodes
// share a kernel.
func (v View) shownCategories() []Category {
	foreign := false
	for _, n := range v.Nodes {
		foreign = foreign || n.CPU[OtherNodes] != 0 || n.Memory[OtherNodes] != 0
	}
	var out []Category
	for _, c := range Categories {
		if c != OtherNodes || foreign {
			out = append(out, c)
		}
	}
	return out
}
