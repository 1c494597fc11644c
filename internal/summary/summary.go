package summary

import (
	"regexp"
	"sort"
	"time"

	"github.com/tare-dev/tare/internal/blockio"
	"github.com/tare-dev/tare/internal/sample"
	"github.com/tare-dev/tare/internal/stats"
)

// BusyDefinition is stated in --help and in the JSON output.
const BusyDefinition = "node busy = CPU time spent on work: the scheduler's exact task time where the kernel has it " +
	"(cgroup v1 root cpuacct.usage; on cgroup v2 the top-level cgroups plus the root cgroup's threads), plus irq and softirq " +
	"time when the kernel accounts it apart, or else, on a tickless kernel, the CPU on no task (interrupts served on idle CPUs); " +
	"without task time, /proc/stat user + nice + system + irq + softirq + steal (guest time is inside user). iowait and idle " +
	"are not busy. Defined in docs/figures.md#node-busy"

// EffortNote explains why tare leads with busy/idle time rather than load average (seed 004).
const EffortNote = "idle time is the better effort metric: load average counts runnable tasks, so a poller that wakes for a microsecond weighs as much as a job that runs for hours; busy/idle time measures the CPU actually used and what is left"

// Options shape a summary.
type Options struct {
	Match *regexp.Regexp // keep only processes (and their groups) whose command line, comm or group matches
	// Keep, when set, keeps only the processes it says yes to (with Match, those both keep): one lab's
	// processes among several labs' on the node, say. A short-lived process goes with its long-lived
	// ancestor, as with Match.
	Keep func(sample.ProcInfo) bool
	Top  int // processes and children shown in tables (0: 20); JSON keeps all
	// BlockIO is the window's block I/O from the session's tracer (session.Result.BlockIO); nil for none.
	BlockIO *blockio.Snapshot
}

// Summary is the result of a measurement. All CPU figures are millicores (1000 = one core busy).
type Summary struct {
	Meta           sample.Meta    `json:"meta"`
	BusyDefinition string         `json:"busy_definition"`
	Window         Window         `json:"window"`
	Node           Node           `json:"node"`
	Groups         []Group        `json:"groups"`
	Processes      []Process      `json:"processes"`
	Children       []Children     `json:"short_lived_children"`
	Self           *Process       `json:"self,omitempty"`
	SelfBPF        *SelfBPF       `json:"self_bpf,omitempty"` // nil without BPF run-time statistics
	Reconcile      Reconciliation `json:"reconciliation"`
	BlockIO        *BlockIO       `json:"block_io,omitempty"` // nil unless the session traced block I/O
	Filter         string         `json:"filter,omitempty"`
	Warnings       []Warning      `json:"warnings,omitempty"` // about the whole window, not one figure of it
	top            int
	groupSeries    map[string][]float64
	meter          sample.BusyMeter
	busy           sample.Busy
}

// GroupSeries is each group's CPU in millicores per interval (index i is the interval ending at sample
// i+1), short-lived children included in their ancestor's group.
func (s Summary) GroupSeries() map[string][]float64 { return s.groupSeries }

// Window is the measured span.
type Window struct {
	Start     time.Time `json:"start"`
	End       time.Time `json:"end"`
	Seconds   float64   `json:"seconds"`
	Intervals int       `json:"intervals"`
}

// Node is the node-wide CPU picture.
type Node struct {
	CPUs int `json:"cpus"`
	// Busy is node busy per interval from Reference (the same figure as Reconciliation.NodeBusy, whose
	// window mean it is).
	Busy        stats.Summary `json:"busy_millicores"`
	BusyPercent float64       `json:"busy_percent_of_all_cores"`
	Reference   string        `json:"busy_reference"`
	// ProcStatBusy is /proc/stat busy over the window, and Split the same by mode: the only split there is.
	ProcStatBusy float64             `json:"proc_stat_busy_millicores"`
	Split        map[string]float64  `json:"busy_split_millicores"` // user, nice, system, irq, softirq, steal
	Iowait       float64             `json:"iowait_millicores"`
	Idle         float64             `json:"idle_millicores"`
	Load         [3]float64          `json:"load_average"` // at the end of the window
	LoadMean1    float64             `json:"load1_mean"`
	Pressure     map[string]Pressure `json:"pressure,omitempty"`
	EffortNote   string              `json:"effort_note"`
}

// Pressure is the share of the window in which some (or all) runnable tasks stalled on a resource.
type Pressure struct {
	SomePercent float64 `json:"some_percent"`
	FullPercent float64 `json:"full_percent"`
}

// Group is a Kubernetes component, a pod, kernel threads or other processes.
type Group struct {
	Name        string        `json:"name"`
	Kind        string        `json:"kind"`
	Processes   int           `json:"processes"`
	CPU         stats.Summary `json:"cpu_millicores"` // per-interval series; Mean is the window mean
	ChildrenCPU float64       `json:"children_cpu_millicores"`
	SharePct    float64       `json:"share_of_busy_percent"`
	Memory
	Disk
}

// Memory in bytes, mean over the detail samples (summed over processes for groups).
type Memory struct {
	RSS     float64 `json:"rss_bytes"`
	PSS     float64 `json:"pss_bytes"`
	Private float64 `json:"private_bytes"`
	Threads int     `json:"threads"`
}

// Disk in bytes per second over the window.
type Disk struct {
	ReadBps  float64 `json:"read_bytes_per_second"`
	WriteBps float64 `json:"write_bytes_per_second"`
}

// Process is one long-lived process (or a short-lived one whose parent tare did not know).
type Process struct {
	PID         int           `json:"pid"`
	PPID        int           `json:"ppid"`
	Comm        string        `json:"comm"`
	Cmdline     string        `json:"cmdline"`
	Group       string        `json:"group"`
	Kind        string        `json:"kind"`
	PodUID      string        `json:"pod_uid,omitempty"`
	Container   string        `json:"container_id,omitempty"`
	PodNS       string        `json:"pod_namespace,omitempty"`
	PodName     string        `json:"pod_name,omitempty"`
	CtrName     string        `json:"container_name,omitempty"`
	CPU         stats.Summary `json:"cpu_millicores"`
	ChildrenCPU float64       `json:"children_cpu_millicores"`
	Started     bool          `json:"started_in_window,omitempty"`
	Exited      bool          `json:"exited_in_window,omitempty"`
	Memory
	Disk
}

// Children aggregates short-lived processes with one command line under the long-lived process that
// spawned them.
type Children struct {
	ParentPID     int     `json:"parent_pid"`
	ParentCmdline string  `json:"parent_cmdline"`
	Group         string  `json:"group"`
	Cmdline       string  `json:"cmdline"`
	Runs          int     `json:"runs"`
	CPU           float64 `json:"cpu_millicores"`
	CPUPerRunMs   float64 `json:"cpu_per_run_ms"`
	PerMinute     float64 `json:"runs_per_minute"`
	PeriodSeconds float64 `json:"period_seconds,omitempty"` // median gap between starts
	SharePct      float64 `json:"share_of_busy_percent"`
	// Starts are the runs' start times, sorted.
	Starts []time.Time `json:"-"`
	ns     uint64
}

// Reconciliation checks that the parts add up to the node total. The reference is the node's task time
// where the kernel offers it (the scheduler's exact nanoseconds for every task, plus irq time when the
// kernel accounts it apart); otherwise /proc/stat busy, whose user/system split is sampled at each
// scheduler tick. See sample.BusyMeter.
type Reconciliation struct {
	Reference      string           `json:"reference"`
	ReferenceKind  sample.Reference `json:"reference_kind"`
	ReferenceExact bool             `json:"reference_exact"`
	ReferenceNote  string           `json:"reference_note,omitempty"` // why the recorded reference was not used
	NodeBusy       float64          `json:"node_busy_millicores"`
	Groups         float64          `json:"groups_millicores"`
	Self           float64          `json:"self_millicores"`
	Unattributed   float64          `json:"unattributed_millicores"`
	Resolution     float64          `json:"resolution_millicores"`
	// IRQ is irq and softirq time inside NodeBusy that may be charged to no process (without IRQ time
	// accounting: the CPU on no task that node busy adds, see sample.BusyMeter.NoTask): unattributed may
	// exceed the resolution by this much without a warning.
	IRQ float64 `json:"irq_no_process_millicores,omitempty"`
	// WithinTolerance says that unattributed is from -Resolution to Resolution+IRQ, so no warning concerns
	// it (the JSON name is older than the IRQ allowance).
	WithinTolerance bool    `json:"within_resolution"`
	ProcStatBusy    float64 `json:"proc_stat_busy_millicores"`
	ProcStatRes     float64 `json:"proc_stat_resolution_millicores"`
	ProcStatGap     float64 `json:"proc_stat_minus_reference_millicores"`
	TickHZ          int     `json:"tick_hz"`
	TickHZAssumed   bool    `json:"tick_hz_assumed,omitempty"`
	Explanation     string  `json:"explanation"`
	// Warnings qualify the figures above, each naming the one it concerns.
	Warnings []Warning `json:"warnings,omitempty"`
}

func mc(ns uint64, seconds float64) float64 {
	if seconds <= 0 {
		return 0
	}
	return float64(ns) / 1e9 / seconds * 1000
}

func sortGroups(gs []Group) {
	sort.Slice(gs, func(i, j int) bool {
		if gs[i].CPU.Mean != gs[j].CPU.Mean {
			return gs[i].CPU.Mean > gs[j].CPU.Mean
		}
		return gs[i].Name < gs[j].Name
	})
}
