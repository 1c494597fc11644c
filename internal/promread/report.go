package promread

import (
	"time"

	"github.com/tare-dev/tare/internal/warning"
)

// Warning codes of a Prometheus read.
const (
	// WarnPartialCoverage: a node's samples begin inside the window, so its rates read short.
	WarnPartialCoverage = "partial-coverage"
	// WarnNoNodeLabel: agent series without a node label, left out of every node.
	WarnNoNodeLabel = "no-node-label"
	// WarnPrometheus: a warning Prometheus returned with an answer.
	WarnPrometheus = "prometheus"
)

// Report is what tare agents measured over a window, read back from Prometheus. CPU is in cores (CPU
// seconds per second averaged over the window), memory in bytes at the last scrape.
type Report struct {
	Prometheus string            `json:"prometheus"` // the server's URL
	Window     string            `json:"window"`     // as PromQL writes it: 10m, 30s
	Time       time.Time         `json:"time"`       // end of the window
	Nodes      []Node            `json:"nodes"`
	Cluster    Cluster           `json:"cluster"`
	Warnings   []warning.Warning `json:"warnings,omitempty"`

	// Top bounds the groups and pods the table lists (0: all); JSON holds every one.
	Top int `json:"-"`
}

// Node is one node's figures. Groups are the busiest first.
type Node struct {
	Name                string  `json:"node"`
	CPUs                float64 `json:"cpus"`
	BusyCores           float64 `json:"busy_cores"`
	BusyPercent         float64 `json:"busy_percent"` // of CPUs; 0 when CPUs is unknown
	OverheadCores       float64 `json:"overhead_cores"`
	KubeletRuntimeCores float64 `json:"kubelet_runtime_cores"`
	TareCores           float64 `json:"tare_cores"`
	Groups              []Group `json:"groups"`
}

// Group is one group of processes on a node (a component, a pod, the kernel, tare itself, other).
type Group struct {
	Name     string           `json:"group"`
	Kind     string           `json:"kind"`
	CPUCores float64          `json:"cpu_cores"`
	Memory   map[string]int64 `json:"memory_bytes,omitempty"` // by kind: rss, pss, private
}

// Cluster sums the nodes read (only the one asked for, with --node).
type Cluster struct {
	Nodes             int     `json:"nodes"`
	BusyCores         float64 `json:"busy_cores"`
	OverheadCores     float64 `json:"overhead_cores"`
	ControlPlaneCores float64 `json:"control_plane_cores"`
	Pods              []Pod   `json:"pods"` // busiest first
}

// Pod is one pod's CPU on the node it runs on.
type Pod struct {
	Node      string  `json:"node"`
	Namespace string  `json:"namespace"`
	Pod       string  `json:"pod"`
	CPUCores  float64 `json:"cpu_cores"`
}
