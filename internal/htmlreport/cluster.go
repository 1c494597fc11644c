package htmlreport

import (
	"fmt"
	"strings"
	"time"

	"github.com/tare-dev/tare/internal/cluster"
	"github.com/tare-dev/tare/internal/output"
)

// perNodeGroups is how many of a node's busiest groups its chart shows.
const perNodeGroups = 12

// stackRows is the chart input of kind stack: one horizontal bar per row, split into the named parts.
type stackRows struct {
	Unit  string      `json:"unit"`
	Rows  []string    `json:"rows"`
	Parts []namedLine `json:"parts"` // one value per row
	Marks []float64   `json:"marks"` // a marker per row (node busy)
	Mark  string      `json:"mark"`
}

// Cluster is the page of tare cluster measure: the cluster's chart (a bar per node split by category,
// node busy marked), the nodes' table, a chart of each node's busiest groups, and the notes.
func Cluster(v cluster.View, version string) Page {
	p := Page{
		Title:   "tare: what the cluster costs",
		Version: version, Made: time.Now(),
		Subtitle: fmt.Sprintf("%d nodes, %d measured · %s window ending %s · %d CPUs · %d running pods",
			v.Totals.Nodes, v.Totals.Measured, v.Window, stamp(v.Taken), v.Totals.CPUs, v.Totals.Pods),
	}
	if v.Totals.Measured == 0 {
		p.Thin = "No node's agent answered: see the notes for what each said."
	}
	p.Cards = []Card{
		{Label: "Cluster busy", Value: output.Millicores(v.Totals.Busy), Detail: fmt.Sprintf("on %d kernels, %d CPUs", v.Totals.Kernels, v.Totals.CPUs)},
		{Label: "Control plane", Value: output.Millicores(v.Totals.CPU[cluster.ControlPlane]), Detail: output.Bytes(v.Totals.Memory[cluster.ControlPlane])},
		{Label: "Kubelet+runtime", Value: output.Millicores(v.Totals.CPU[cluster.NodeAgents]), Detail: output.Bytes(v.Totals.Memory[cluster.NodeAgents])},
		{Label: "Per pod", Value: output.Millicores(v.Totals.PerPod.CPU), Detail: output.Bytes(v.Totals.PerPod.Memory) + " in the pod runtime"},
	}
	if missing := v.Totals.Nodes - v.Totals.Measured; missing > 0 {
		p.Cards = append(p.Cards, Card{Label: warningLabel, Value: fmt.Sprintf("%d not measured", missing), Detail: "see the notes"})
	}
	p.Sections = append(p.Sections, clusterSection(v))
	for _, n := range v.Nodes {
		if n.Status == cluster.StatusOK && len(n.Groups) > 0 {
			p.Sections = append(p.Sections, clusterNodeSection(n))
		}
	}
	p.Sections = append(p.Sections, clusterNotes(v))
	return p
}

func clusterSection(v cluster.View) Section {
	var cats []cluster.Category
	for _, c := range cluster.Categories {
		if c == cluster.Unattributed {
			continue
		}
		for _, n := range v.Nodes {
			if n.CPU[c] > 0 {
				cats = append(cats, c)
				break
			}
		}
	}
	d := stackRows{Unit: "millicores", Rows: []string{}, Parts: []namedLine{}, Marks: []float64{}, Mark: "node busy"}
	var measured []cluster.Node
	for _, n := range v.Nodes {
		if n.Status == cluster.StatusOK {
			measured = append(measured, n)
			d.Rows = append(d.Rows, n.Name)
			d.Marks = append(d.Marks, n.Busy.Mean)
		}
	}
	for _, c := range cats {
		l := namedLine{Name: c.Title(), Series: []float64{}}
		for _, n := range measured {
			l.Series = append(l.Series, n.CPU[c])
		}
		d.Parts = append(d.Parts, l)
	}
	t := Table{Caption: "CPU per node (millicores, window means)", Head: []string{"node", "status", "CPUs", "pods", "busy", "p95", "n"}, Right: []bool{false, false, true, true, true, true, true}}
	for _, c := range cluster.Categories {
		t.Head = append(t.Head, c.Title())
		t.Right = append(t.Right, true)
	}
	t.Head, t.Right = append(t.Head, "per pod"), append(t.Right, true)
	for _, n := range v.Nodes {
		row := []string{n.Name, string(n.Status)}
		if n.Status != cluster.StatusOK {
			t.Rows = append(t.Rows, append(row, make([]string, len(t.Head)-2)...))
			continue
		}
		row = append(row, fmt.Sprint(n.CPUs), fmt.Sprint(n.Pods), output.Millicores(n.Busy.Mean), output.Millicores(n.Busy.P95), fmt.Sprint(n.Busy.N))
		for _, c := range cluster.Categories {
			row = append(row, output.Millicores(n.CPU[c]))
		}
		t.Rows = append(t.Rows, append(row, output.Millicores(n.PerPod.CPU)))
	}
	total := []string{"cluster", fmt.Sprintf("%d/%d", v.Totals.Measured, v.Totals.Nodes), fmt.Sprint(v.Totals.CPUs), fmt.Sprint(v.Totals.Pods), output.Millicores(v.Totals.Busy), "", ""}
	for _, c := range cluster.Categories {
		total = append(total, output.Millicores(v.Totals.CPU[c]))
	}
	t.Rows = append(t.Rows, append(total, output.Millicores(v.Totals.PerPod.CPU)))
	mem := Table{Caption: "Memory per node (PSS where readable, else RSS)", Head: []string{"node"}, Right: []bool{false}}
	for _, c := range cluster.Categories {
		if c != cluster.Unattributed {
			mem.Head, mem.Right = append(mem.Head, c.Title()), append(mem.Right, true)
		}
	}
	mem.Head, mem.Right = append(mem.Head, "per pod"), append(mem.Right, true)
	memRow := func(name string, m map[cluster.Category]float64, per float64) []string {
		row := []string{name}
		for _, c := range cluster.Categories {
			if c != cluster.Unattributed {
				row = append(row, output.Bytes(m[c]))
			}
		}
		return append(row, output.Bytes(per))
	}
	for _, n := range measured {
		mem.Rows = append(mem.Rows, memRow(n.Name, n.Memory, n.PerPod.Memory))
	}
	mem.Rows = append(mem.Rows, memRow("cluster", v.Totals.Memory, v.Totals.PerPod.Memory))
	s := Section{ID: "cluster", Title: "The cluster by node",
		Intro:  "Each measured node's CPU by category, stacked; the black mark is the node's busy. The gap between the stack and the mark is CPU no process was credited with.",
		Tables: []Table{t, mem}}
	if len(measured) > 0 {
		s.Charts = []Chart{{ID: "chart-cluster", Kind: "stack", Height: 90 + 36*len(measured), Data: d}}
	}
	return s
}

func clusterNodeSection(n cluster.Node) Section {
	bars := barRows{Unit: "millicores", Rows: []barRow{}}
	for i, g := range n.Groups {
		if i == perNodeGroups {
			break
		}
		bars.Rows = append(bars.Rows, barRow{Name: g.Name, Value: g.CPU.Mean})
	}
	intro := fmt.Sprintf("%s: %d CPUs, busy %s (p95 %s over %d intervals, %s), %d running pods.",
		n.Name, n.CPUs, output.Millicores(n.Busy.Mean), output.Millicores(n.Busy.P95), n.Busy.N, orDash(n.Reference), n.Pods)
	if len(n.SharesWith) > 0 {
		intro += " Shares its kernel with " + strings.Join(n.SharesWith, ", ") + "."
	}
	return Section{ID: "node-" + n.Name, Title: "Node " + n.Name, Intro: intro,
		Charts: []Chart{{ID: "chart-node-" + n.Name, Kind: "bars", Title: "Busiest groups (millicores)", Height: 60 + 24*len(bars.Rows), Data: bars}}}
}

func clusterNotes(v cluster.View) Section {
	s := Section{ID: "notes", Title: "How this was measured"}
	s.Items = append(s.Items, fmt.Sprintf("Each node's tare agent summarised the trailing %s; figures are window means. The cluster's figures resolve to ±%s.", v.Window, output.Millicores(v.Totals.Resolution)))
	for _, n := range v.Nodes {
		if n.Status != cluster.StatusOK {
			s.Items = append(s.Items, fmt.Sprintf("%s not measured (%s): %s", n.Name, n.Status, n.Reason))
		}
	}
	for _, sk := range v.SharedKernels {
		s.Items = append(s.Items, sk.Note()+".")
	}
	for _, n := range v.Nodes {
		for _, w := range n.Warnings {
			s.Items = append(s.Items, fmt.Sprintf("%s: warning (%s, on %s): %s; likely cause: %s", n.Name, w.Code, w.Figure, w.Message, w.Cause))
		}
		for _, l := range n.Limitations {
			s.Items = append(s.Items, n.Name+": limitation: "+l)
		}
	}
	return s
}
