package density

import (
	"cmp"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/tare-dev/tare/internal/component"
	"github.com/tare-dev/tare/internal/session"
)

// Cost is what one group used over a window: CPU in millicores, memory in bytes (means over the window).
type Cost struct {
	CPU     float64 `json:"cpu_millicores"`
	RSS     float64 `json:"rss_bytes"`
	PSS     float64 `json:"pss_bytes"`
	Private float64 `json:"private_bytes"`
}

// Window is what one step measured.
type Window struct {
	Step
	Start   time.Time       `json:"start"`
	Seconds float64         `json:"seconds"`
	Busy    float64         `json:"node_busy_millicores"`
	Groups  map[string]Cost `json:"groups"`
	// CPUSeries is each group's CPU in millicores per sampling interval (1 s in tare density), the
	// pods' summed into PodsGroup: the 1 s demand the percentile reservation reads (nil in results
	// stored before it).
	CPUSeries map[string][]float64 `json:"cpu_series_millicores,omitempty"`
	// System names the groups that are neither Kubernetes's components nor pods nor tare (kernel threads
	// and the machine's other processes): what system-reserved is for.
	System []string `json:"system_groups,omitempty"`
	// WorkingSet is the working set the eviction manager would have seen, nil when not read.
	WorkingSet *WindowMemory     `json:"working_set,omitempty"`
	Warnings   []session.Warning `json:"warnings,omitempty"` // the window's, each with its sample
}

// Where a group's processes run, for the users of cgroup-based tools: what a pod cgroup sees is already in
// the pod's own accounting (requests, limits, kubectl top); the rest is not.
const (
	InPodCgroup      = "pod cgroup"
	OutsidePodCgroup = "outside the pod cgroups"
	Mixed            = "both"
)

// PodsGroup sums the pods' own processes (every group of kind pod): the workload, here idle.
const PodsGroup = "pods (their own processes)"

// Component is one group's cost against the pod count.
type Component struct {
	Name      string `json:"name"`
	Role      string `json:"role,omitempty"` // from the component registry
	ChargedTo string `json:"charged_to"`
	CPU       Fit    `json:"cpu_millicores"`
	RSS       Fit    `json:"rss_bytes"`
	PSS       Fit    `json:"pss_bytes"`
	Private   Fit    `json:"private_bytes"`
}

// Model is the per-pod model of one node: each component's fixed and marginal cost.
type Model struct {
	Busy       Fit         `json:"node_busy_millicores"`
	Components []Component `json:"components"`
	// OverheadCPU and OverheadPrivate fit the per-window sum of the node's agents, runtime and per-pod
	// runtime processes that run outside the pod cgroups (OverheadFrom): their per-pod cost together.
	OverheadCPU     Fit      `json:"overhead_cpu_millicores"`
	OverheadPrivate Fit      `json:"overhead_private_bytes"`
	OverheadFrom    []string `json:"overhead_from"`
	// Overhead is that per-pod cost at the upper end of its 95% interval (0 when below zero, NaN when it
	// could not be fitted): what a RuntimeClass's overhead.podFixed should add to every pod.
	Overhead Cost `json:"per_pod_outside_pod_cgroups"`
}

// overheadRoles are the roles whose per-pod cost a pod's RuntimeClass overhead should carry when they run
// outside the pod's cgroup: they work for the pods of this node.
var overheadRoles = []component.Role{component.RoleNode, component.RoleRuntime, component.RolePodRuntime}

// Fitted returns the model of the windows: a line per group seen in any window (a group missing from a
// window counts as zero there), busiest marginal CPU first. charged says where each group's processes ran
// (InPodCgroup, OutsidePodCgroup, Mixed); seed makes the bootstrap repeatable.
func Fitted(ws []Window, charged map[string]string, seed uint64) Model {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	xs := make([]float64, len(ws))
	busy := make([]float64, len(ws))
	names := map[string]bool{}
	for i, w := range ws {
		xs[i], busy[i] = float64(w.Pods), w.Busy
		for g := range w.Groups {
			names[g] = true
		}
	}
	m := Model{Busy: TheilSen(xs, busy, rng)}
	for _, name := range slices.Sorted(maps.Keys(names)) {
		c := Component{Name: name, ChargedTo: charged[name]}
		if e, ok := component.Lookup(name); ok {
			c.Role = string(e.Role)
		}
		series := func(get func(Cost) float64) Fit {
			return TheilSen(xs, sumOver(ws, []string{name}, get), rng)
		}
		c.CPU = series(func(x Cost) float64 { return x.CPU })
		c.RSS = series(func(x Cost) float64 { return x.RSS })
		c.PSS = series(func(x Cost) float64 { return x.PSS })
		c.Private = series(func(x Cost) float64 { return x.Private })
		m.Components = append(m.Components, c)
	}
	slices.SortStableFunc(m.Components, func(a, b Component) int {
		return -cmp.Compare(a.CPU.Marginal, b.CPU.Marginal) // NaN lowest
	})
	for _, c := range m.Components {
		if c.ChargedTo == OutsidePodCgroup && slices.Contains(overheadRoles, component.Role(c.Role)) {
			m.OverheadFrom = append(m.OverheadFrom, c.Name)
		}
	}
	// One line through the sum, not a sum of upper ends: its interval is the total's 95%, and components
	// whose cost does not move with the pods do not widen it one by one.
	total := func(get func(Cost) float64) Fit {
		return TheilSen(xs, sumOver(ws, m.OverheadFrom, get), rng)
	}
	m.OverheadCPU = total(func(x Cost) float64 { return x.CPU })
	m.OverheadPrivate = total(func(x Cost) float64 { return x.Private })
	m.Overhead = Cost{CPU: upper(m.OverheadCPU), Private: upper(m.OverheadPrivate),
		RSS: upper(total(func(x Cost) float64 { return x.RSS })), PSS: upper(total(func(x Cost) float64 { return x.PSS }))}
	return m
}

// sumOver is each window's sum of get over the named groups: the points a line of Fitted is fitted to
// (a group missing from a window counts as zero there).
func sumOver(ws []Window, names []string, get func(Cost) float64) []float64 {
	ys := make([]float64, len(ws))
	for i, w := range ws {
		for _, name := range names {
			ys[i] += get(w.Groups[name])
		}
	}
	return ys
}

// listed says whether the table lists the component: not when it used no CPU and held no memory.
func (c Component) listed() bool {
	return c.CPU.Fixed != 0 || c.CPU.Marginal != 0 || c.RSS.Fixed != 0 || c.RSS.Marginal != 0
}

// upper is the upper end of f's interval, 0 when that is below zero, NaN when there is none.
func upper(f Fit) float64 {
	if math.IsNaN(f.Hi) {
		return math.NaN()
	}
	return max(0, f.Hi)
}

// Component returns the named component's line, false when no window saw it.
func (m Model) Component(name string) (Component, bool) {
	for _, c := range m.Components {
		if c.Name == name {
			return c, true
		}
	}
	return Component{}, false
}
