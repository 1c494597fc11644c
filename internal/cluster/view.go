package cluster

import (
	"sort"
	"time"

	"github.com/tare-dev/tare/internal/stats"
	"github.com/tare-dev/tare/internal/summary"
)

// Status is how a node's agent answered.
type Status string

// Statuses of a node row.
const (
	StatusOK          Status = "ok"
	StatusNoAgent     Status = "no-agent"    // no agent pod on the node
	StatusUnready     Status = "unready"     // the agent's pod exists but is not Ready, or has no sample yet
	StatusUnreachable Status = "unreachable" // the agent could not be reached
	StatusForbidden   Status = "forbidden"   // the agent refused the caller's credentials or right (401, 403)
	StatusBadWindow   Status = "bad-window"  // the agent does not keep the window asked for
)

// View is the cluster over one window: a row per node and the cluster's totals.
type View struct {
	// Window is the trailing window asked of every agent; each node's own span is in its row.
	Window time.Duration `json:"-"`
	// WindowSeconds is Window in seconds (JSON).
	WindowSeconds float64   `json:"window_seconds"`
	Taken         time.Time `json:"taken"`
	Nodes         []Node    `json:"nodes"`
	Totals        Totals    `json:"totals"`
	// SharedKernels lists the sets of nodes that run on one kernel (the same boot ID).
	SharedKernels []SharedKernel `json:"shared_kernels,omitempty"`
}

// Node is one node's row. Figures are window means in millicores and bytes; they are zero unless Status
// is ok.
type Node struct {
	Name   string `json:"name"`
	Status Status `json:"status"`
	// Reason says what is wrong when Status is not ok, and what to do.
	Reason string   `json:"reason,omitempty"`
	Agent  string   `json:"agent_pod,omitempty"`
	Roles  []string `json:"roles,omitempty"` // from the node's node-role.kubernetes.io/ labels
	CPUs   int      `json:"cpus,omitempty"`
	BootID string   `json:"boot_id,omitempty"`
	// Pods is the number of the node's running pods (the API's count), PerPod the pod runtime's CPU per pod.
	Pods int `json:"pods"`
	// Start and Seconds are the span the agent summarised (up to Window).
	Start   time.Time `json:"window_start,omitzero"`
	Seconds float64   `json:"window_seconds,omitempty"`
	// Busy is node busy per interval (n, mean, p95, max) from Reference.
	Busy      stats.Summary `json:"busy_millicores"`
	Reference string        `json:"busy_reference,omitempty"`
	// CPU and Memory per category (PSS where the agent could read it, else RSS).
	CPU    map[Category]float64 `json:"cpu_millicores,omitempty"`
	Memory map[Category]float64 `json:"memory_bytes,omitempty"`
	PerPod PerPod               `json:"per_pod"`
	// Resolution is the node's reconciliation resolution: the smallest difference its figures resolve.
	Resolution float64 `json:"resolution_millicores,omitempty"`
	// Warnings are the agent's reconciliation warnings, each naming the figure it qualifies (this node's).
	Warnings []summary.Warning `json:"warnings,omitempty"`
	// Limitations are what the agent could not read on this node.
	Limitations []string `json:"limitations,omitempty"`
	// Groups are the agent's groups, busiest first.
	Groups []summary.Group `json:"groups,omitempty"`
	// SharesWith names the other nodes on the same kernel.
	SharesWith []string `json:"shares_kernel_with,omitempty"`
	// self is the agent's own CPU and memory, in Tare with any other tare the agent saw outside pods.
	selfCPU, selfMem float64
}

// PerPod is what one more pod costs the node in the runtime's own processes: the pod runtime's CPU and
// memory divided by the running pods.
type PerPod struct {
	CPU    float64 `json:"cpu_millicores"`
	Memory float64 `json:"memory_bytes"`
}

// Totals are the cluster's sums over the nodes whose agents answered.
type Totals struct {
	Nodes    int `json:"nodes"`
	Measured int `json:"measured"`
	CPUs     int `json:"cpus"`
	Pods     int `json:"pods"`
	// Kernels is the number of distinct kernels (machines) among the measured nodes.
	Kernels int                  `json:"kernels"`
	Busy    float64              `json:"busy_millicores"`
	CPU     map[Category]float64 `json:"cpu_millicores"`
	Memory  map[Category]float64 `json:"memory_bytes"`
	PerPod  PerPod               `json:"per_pod"`
	// Resolution is the sum of the nodes' resolutions: the cluster figures resolve no finer.
	Resolution float64 `json:"resolution_millicores"`
}

// SharedKernel is a set of nodes with one boot ID. SharedProcesses says they also share a PID namespace,
// so each sees the others' processes outside pods.
type SharedKernel struct {
	BootID          string   `json:"boot_id"`
	Nodes           []string `json:"nodes"`
	SharedProcesses bool     `json:"shared_pid_namespace"`
}

// Input is what was learnt of one node: its name and roles, its running pods, and its agent's answer.
type Input struct {
	Node    string
	Roles   []string
	Pods    int
	Agent   string
	Status  Status
	Reason  string
	Summary *summary.Summary // set when Status is ok
}

// Build folds the nodes' inputs into the view. Nodes sharing a kernel count its busy once in the
// totals; when they also share a PID namespace, so does everything they see outside pods.
func Build(window time.Duration, taken time.Time, in []Input) View {
	v := View{Window: window, WindowSeconds: window.Seconds(), Taken: taken,
		Totals: Totals{CPU: map[Category]float64{}, Memory: map[Category]float64{}}}
	sorted := append([]Input(nil), in...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Node < sorted[j].Node })
	for _, x := range sorted {
		v.Nodes = append(v.Nodes, row(x))
	}
	v.SharedKernels = sharedKernels(sorted)
	shared := map[string]SharedKernel{}
	for _, sk := range v.SharedKernels {
		for _, n := range sk.Nodes {
			shared[n] = sk
		}
	}
	counted := map[string]bool{} // boot IDs whose machine-wide figures are in the totals
	setPods := map[string]int{}  // running pods of each set of nodes sharing processes
	for _, n := range v.Nodes {
		if sk, ok := shared[n.Name]; ok && sk.SharedProcesses && n.Status == StatusOK {
			setPods[sk.BootID] += n.Pods
		}
	}
	for i := range v.Nodes {
		n := &v.Nodes[i]
		v.Totals.Nodes++
		if n.Status != StatusOK {
			continue
		}
		v.Totals.Measured++
		v.Totals.Pods += n.Pods
		sk, isShared := shared[n.Name]
		for _, o := range sk.Nodes {
			if o != n.Name {
				n.SharesWith = append(n.SharesWith, o)
			}
		}
		first := !isShared || !counted[sk.BootID]
		if isShared {
			counted[sk.BootID] = true
		}
		if first {
			v.Totals.Kernels++
			v.Totals.CPUs += n.CPUs
			v.Totals.Busy += n.Busy.Mean
			v.Totals.Resolution += n.Resolution
		}
		for _, c := range Categories {
			if c.machineWide() && isShared && sk.SharedProcesses && !first {
				if c == Tare { // every agent is its own node's, seen by the others in their pods
					v.Totals.CPU[c] += n.selfCPU
					v.Totals.Memory[c] += n.selfMem
				}
				continue
			}
			if c == OtherNodes || c == Unattributed {
				continue // other nodes' pods count on their own node; unattributed is derived below
			}
			v.Totals.CPU[c] += n.CPU[c]
			v.Totals.Memory[c] += n.Memory[c]
		}
		if isShared && sk.SharedProcesses && setPods[sk.BootID] > 0 {
			// Each node sees the pod runtime of every node in the set: its cost is per pod of the set.
			pods := float64(setPods[sk.BootID])
			n.PerPod = PerPod{CPU: n.CPU[PodOverhead] / pods, Memory: n.Memory[PodOverhead] / pods}
		}
	}
	if v.Totals.Pods > 0 {
		pods := float64(v.Totals.Pods)
		v.Totals.PerPod = PerPod{CPU: v.Totals.CPU[PodOverhead] / pods, Memory: v.Totals.Memory[PodOverhead] / pods}
	}
	// What the nodes' busy does not explain once shared figures are counted once.
	var parts float64
	for _, c := range Categories {
		if c != Unattributed {
			parts += v.Totals.CPU[c]
		}
	}
	v.Totals.CPU[Unattributed] = v.Totals.Busy - parts
	return v
}

// row is one node's row from its input.
func row(x Input) Node {
	n := Node{Name: x.Node, Status: x.Status, Reason: x.Reason, Agent: x.Agent, Roles: x.Roles, Pods: x.Pods}
	if x.Status != StatusOK || x.Summary == nil {
		return n
	}
	s := x.Summary
	n.CPUs, n.BootID = s.Node.CPUs, s.Meta.BootID
	n.Start, n.Seconds = s.Window.Start, s.Window.Seconds
	n.Busy, n.Reference = s.Node.Busy, s.Node.Reference
	n.Resolution = s.Reconcile.Resolution
	n.CPU, n.Memory = map[Category]float64{}, map[Category]float64{}
	for _, g := range s.Groups {
		c := categoryOf(g)
		n.CPU[c] += g.CPU.Mean
		n.Memory[c] += memory(g.Memory)
	}
	// tare and what is left are the reconciliation's own figures: groups + tare + unattributed = busy.
	n.selfCPU = s.Reconcile.Self
	if s.Self != nil {
		n.selfMem = memory(s.Self.Memory)
	}
	n.CPU[Tare] += n.selfCPU
	n.Memory[Tare] += n.selfMem
	n.CPU[Unattributed] = s.Reconcile.Unattributed
	if n.Pods > 0 {
		n.PerPod = PerPod{CPU: n.CPU[PodOverhead] / float64(n.Pods), Memory: n.Memory[PodOverhead] / float64(n.Pods)}
	}
	for _, w := range s.Reconcile.Warnings {
		w.Subject = n.Name
		n.Warnings = append(n.Warnings, w)
	}
	n.Limitations = s.Meta.Limitations
	n.Groups = s.Groups
	return n
}

// memory is a group's proportional memory where the agent read it, else its resident memory.
func memory(m summary.Memory) float64 {
	if m.PSS > 0 {
		return m.PSS
	}
	return m.RSS
}

// sharedKernels finds the nodes with one boot ID.
func sharedKernels(in []Input) []SharedKernel {
	byBoot := map[string][]Input{}
	var order []string
	for _, x := range in {
		if x.Status != StatusOK || x.Summary == nil || x.Summary.Meta.BootID == "" {
			continue
		}
		id := x.Summary.Meta.BootID
		if _, ok := byBoot[id]; !ok {
			order = append(order, id)
		}
		byBoot[id] = append(byBoot[id], x)
	}
	var out []SharedKernel
	for _, id := range order {
		xs := byBoot[id]
		if len(xs) < 2 {
			continue
		}
		sk := SharedKernel{BootID: id, SharedProcesses: true}
		for _, x := range xs {
			sk.Nodes = append(sk.Nodes, x.Node)
			ns := x.Summary.Meta.PIDNamespace
			if ns == "" || ns != xs[0].Summary.Meta.PIDNamespace {
				sk.SharedProcesses = false
			}
		}
		out = append(out, sk)
	}
	return out
}
