package density

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strings"
	"text/tabwriter"

	"github.com/tare-dev/tare/internal/output"
)

// Reserved is a kube-reserved recommendation for a node that runs MaxPods pods, from the measured cost of
// the node's agents, runtime and per-pod runtime processes (the RuntimeClass's components, From), beside
// what the managed services' formulas reserve for a node of this size.
type Reserved struct {
	MaxPods     int     `json:"max_pods"`
	CPUs        float64 `json:"node_cpus"`
	MemoryBytes float64 `json:"node_memory_bytes"`
	// Measured is the line through the components' per-window sum at MaxPods pods: the mean (CPU, and
	// PSS, which adds up across processes), and the upper end of its 95% interval, which is what it
	// recommends reserving.
	Measured  Reservation   `json:"measured"`
	Mean      Reservation   `json:"measured_mean"`
	From      []string      `json:"from"`
	Providers []Reservation `json:"providers"`
	// Extrapolated is true when MaxPods lies beyond the largest pod count measured.
	Extrapolated bool `json:"extrapolated"`
}

// Reservation is CPU (millicores) and memory (bytes) reserved for Kubernetes's node daemons.
type Reservation struct {
	Name    string  `json:"name"`
	CPU     float64 `json:"cpu_millicores"`
	Memory  float64 `json:"memory_bytes"`
	Formula string  `json:"formula,omitempty"`
}

const mib = 1 << 20

// KubeReserved fits the per-window sum of the components in from (CPU and PSS) against the pod count and
// reads it at maxPods, for a node of cpus cores and memory bytes. It is nil without windows at two pod
// counts, a pod limit or the node's size.
func KubeReserved(ws []Window, from []string, maxPods int, cpus, memory float64, seed uint64) *Reserved {
	if maxPods <= 0 || cpus <= 0 || memory <= 0 || len(from) == 0 {
		return nil
	}
	rng := rand.New(rand.NewPCG(seed^0x6b72657365727664, seed))
	xs, cpu, pss := make([]float64, len(ws)), make([]float64, len(ws)), make([]float64, len(ws))
	largest := 0
	for i, w := range ws {
		xs[i] = float64(w.Pods)
		largest = max(largest, w.Pods)
		for _, name := range from {
			cpu[i] += w.Groups[name].CPU
			pss[i] += w.Groups[name].PSS
		}
	}
	cpuMid, cpuHi := Predict(xs, cpu, float64(maxPods), rng)
	memMid, memHi := Predict(xs, pss, float64(maxPods), rng)
	if math.IsNaN(cpuHi) || math.IsNaN(memHi) {
		return nil
	}
	return &Reserved{
		MaxPods: maxPods, CPUs: cpus, MemoryBytes: memory, From: from, Extrapolated: maxPods > largest,
		Measured:  Reservation{Name: "measured (95% upper end)", CPU: max(0, cpuHi), Memory: max(0, memHi)},
		Mean:      Reservation{Name: "measured (mean)", CPU: max(0, cpuMid), Memory: max(0, memMid)},
		Providers: ProviderReservations(cpus, memory, maxPods),
	}
}

// ProviderReservations is what EKS, GKE and AKS reserve for Kubernetes's daemons (kube-reserved, without
// the eviction threshold) on a node of cpus cores and memory bytes that runs maxPods pods, by their
// published formulas (EKS's AMI bootstrap; GKE's node allocatable; AKS's node resource reservations for
// Kubernetes 1.29 and later, with its MB read as MiB).
func ProviderReservations(cpus, memory float64, maxPods int) []Reservation {
	return []Reservation{
		{Name: "EKS", CPU: tieredCPU(cpus), Memory: 255*mib + 11*mib*float64(maxPods),
			Formula: "cpu 6% of the 1st core, 1% of the 2nd, 0.5% of the 3rd-4th, 0.25% above; memory 255Mi + 11Mi x max pods"},
		{Name: "GKE", CPU: tieredCPU(cpus), Memory: gkeMemory(memory),
			Formula: "cpu as EKS; memory 25% of the first 4 GiB, 20% of the next 4, 10% of the next 8, 6% of the next 112, 2% above (255Mi below 1 GiB)"},
		{Name: "AKS", CPU: aksCPU(cpus), Memory: math.Min(20*mib*float64(maxPods)+50*mib, 0.25*memory),
			Formula: "cpu 60m at 1 core, 100m at 2, 140m at 4, 180m at 8, 260m at 16, 420m at 32, 740m at 64; memory the lesser of 20Mi x max pods + 50Mi and 25%"},
	}
}

// tieredCPU is the CPU EKS and GKE reserve: 6% of the first core, 1% of the second, 0.5% of the third and
// fourth, 0.25% of every core above four (millicores).
func tieredCPU(cpus float64) float64 {
	return tiers(cpus, []tier{{1, 0.06}, {1, 0.01}, {2, 0.005}, {math.Inf(1), 0.0025}}) * 1000
}

// gkeMemory is the memory GKE reserves: 255 MiB below 1 GiB of memory, else 25% of the first 4 GiB, 20%
// of the next 4, 10% of the next 8, 6% of the next 112 and 2% of the rest.
func gkeMemory(memory float64) float64 {
	const gib = 1 << 30
	if memory < gib {
		return 255 * mib
	}
	return tiers(memory, []tier{{4 * gib, 0.25}, {4 * gib, 0.20}, {8 * gib, 0.10}, {112 * gib, 0.06}, {math.Inf(1), 0.02}})
}

// aksCPU is the CPU AKS reserves: its table's value for the largest size it lists that the node reaches.
func aksCPU(cpus float64) float64 {
	table := []struct{ cores, mc float64 }{{64, 740}, {32, 420}, {16, 260}, {8, 180}, {4, 140}, {2, 100}}
	for _, t := range table {
		if cpus >= t.cores {
			return t.mc
		}
	}
	return 60
}

type tier struct{ size, rate float64 }

// tiers charges each tier's rate on the part of x inside it.
func tiers(x float64, ts []tier) float64 {
	var sum float64
	for _, t := range ts {
		part := math.Min(x, t.size)
		sum += part * t.rate
		if x -= part; x <= 0 {
			break
		}
	}
	return sum
}

// table writes the recommendation beside the providers' figures, with the difference of each.
func (r *Reserved) table(w io.Writer) error {
	fmt.Fprintf(w, "kube-reserved for %d pods on this node (%s CPUs, %s memory), from %s:\n", r.MaxPods,
		formatCores(r.CPUs), output.MiBFixed(r.MemoryBytes, 0), strings.Join(r.From, ", "))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\tCPU\tMEMORY (PSS)\tCPU VS MEASURED\tMEMORY VS MEASURED")
	for _, x := range []Reservation{r.Measured, r.Mean} {
		fmt.Fprintf(tw, "%s\t%s\t%s\t\t\n", x.Name, output.MillicoresFixed(x.CPU, 1), output.MiBFixed(x.Memory, 0))
	}
	for _, p := range r.Providers {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%+.1fm\t%+.0f MiB\n", p.Name, output.MillicoresFixed(p.CPU, 1), output.MiBFixed(p.Memory, 0),
			p.CPU-r.Measured.CPU, (p.Memory-r.Measured.Memory)/mib)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if r.Extrapolated {
		fmt.Fprintf(w, "(%d pods lies beyond the largest count measured: the line is extrapolated; measure up to it with --pods to check.)\n", r.MaxPods)
	}
	_, err := fmt.Fprintln(w, "Measured: the idle pods' cost, CPU as a mean; a node whose pods start and stop often needs more: --churn measures the CPU per pod start.")
	return err
}

func formatCores(c float64) string {
	if c == math.Trunc(c) {
		return fmt.Sprintf("%.0f", c)
	}
	return fmt.Sprintf("%.2f", c)
}
