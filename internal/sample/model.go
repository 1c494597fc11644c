package sample

import (
	"time"

	"github.com/tare-dev/tare/internal/bpfstats"
	"github.com/tare-dev/tare/internal/kernel"
)

// ProcKey identifies a process across PID reuse: the PID and its start time in clock ticks since boot.
type ProcKey struct {
	PID   int    `json:"pid"`
	Start uint64 `json:"start_ticks"`
}

// ProcInfo is what does not change over a process's life (or changes rarely): who it is and where it runs.
// Cmdline is always redacted.
type ProcInfo struct {
	ID        int64   `json:"id"`
	Key       ProcKey `json:"key"`
	PPID      int     `json:"ppid"`
	ParentID  int64   `json:"parent_id,omitempty"` // ProcInfo.ID of the parent when tare knew it, else 0
	Comm      string  `json:"comm"`
	Cmdline   string  `json:"cmdline"`
	Exe       string  `json:"exe,omitempty"`
	UID       int     `json:"uid"`
	Kernel    bool    `json:"kernel_thread,omitempty"`
	Self      bool    `json:"self,omitempty"` // tare itself
	Group     string  `json:"group"`
	GroupKind string  `json:"group_kind"` // component, pod, kernel, other, self
	Cgroup    string  `json:"cgroup,omitempty"`
	PodUID    string  `json:"pod_uid,omitempty"`
	Container string  `json:"container_id,omitempty"`
	PodNS     string  `json:"pod_namespace,omitempty"`
	PodName   string  `json:"pod_name,omitempty"`
	CtrName   string  `json:"container_name,omitempty"`
	FirstSeq  int     `json:"first_seq"`          // sample in which tare first saw it
	BornSeq   int     `json:"born_seq,omitempty"` // sample interval in which it started, if it started during the window (else 0)
	ExitSeq   int     `json:"exit_seq,omitempty"` // sample interval in which it ended, if it did (else 0)
	Seen      bool    `json:"seen_alive"`         // false for processes known only from their exit notification
	// StartTime is when the process started: from its start-time ticks, or from the proc connector's fork
	// event for short-lived processes. Zero when unknown.
	StartTime time.Time `json:"start_time,omitzero"`
}

// NodeCPU holds the cumulative /proc/stat counters, in seconds summed over all CPUs: kernel.CPUTimes with
// the one definition of busy.
type NodeCPU struct {
	User, Nice, System, Idle, Iowait, IRQ, SoftIRQ, Steal, Guest, GuestNice float64
}

// Busy is the CPU time spent doing work: user+nice+system+irq+softirq+steal (guest time is already inside
// user and nice). Idle and iowait are not busy. This is the definition tare documents everywhere.
func (c NodeCPU) Busy() float64 {
	return c.User + c.Nice + c.System + c.IRQ + c.SoftIRQ + c.Steal
}

// Sub returns the difference c-o, field by field.
func (c NodeCPU) Sub(o NodeCPU) NodeCPU {
	return NodeCPU{c.User - o.User, c.Nice - o.Nice, c.System - o.System, c.Idle - o.Idle, c.Iowait - o.Iowait,
		c.IRQ - o.IRQ, c.SoftIRQ - o.SoftIRQ, c.Steal - o.Steal, c.Guest - o.Guest, c.GuestNice - o.GuestNice}
}

// Node is the node-wide part of a sample.
type Node struct {
	CPU      NodeCPU                    `json:"cpu"`
	Load1    float64                    `json:"load1"`
	Load5    float64                    `json:"load5"`
	Load15   float64                    `json:"load15"`
	Pressure map[string]kernel.Pressure `json:"pressure,omitempty"` // cpu, io, memory; absent when the kernel lacks PSI
	// TasksCPUNs is the cumulative task time of the node's reference (Meta.NodeReference), 0 if unreadable.
	TasksCPUNs uint64 `json:"tasks_cpu_ns"`
	Running    int    `json:"procs_running"`
	// Resources are memory, disk and network counters, read on full samples and carried over between them.
	Resources *kernel.Resources `json:"resources,omitempty"`
}

// ProcSample is one process in one sample. CPUNs is the CPU it used since the previous sample (for the
// first sample of a process born during the window: since it started). Detail fields are set only on
// samples where HasDetail is true.
type ProcSample struct {
	ID         int64  `json:"id"`
	CPUNs      uint64 `json:"cpu_ns"`
	HasDetail  bool   `json:"has_detail,omitempty"`
	RSS        uint64 `json:"rss_bytes,omitempty"`
	PSS        uint64 `json:"pss_bytes,omitempty"`
	Private    uint64 `json:"private_bytes,omitempty"`
	ReadBytes  uint64 `json:"read_bytes,omitempty"` // cumulative, from /proc/PID/io
	WriteBytes uint64 `json:"write_bytes,omitempty"`
	Threads    int    `json:"threads,omitempty"`
	// StatmOnly says the memory figures are statm's estimates, smaps_rollup not read yet for this process
	// (kernel.Detail.StatmOnly): RSS is statm's resident size, PSS and Private its anonymous resident pages.
	StatmOnly bool `json:"statm_only,omitempty"`
}

// Sample is everything read at one tick. Seq 0 is the baseline: its deltas are zero.
type Sample struct {
	Seq     int           `json:"seq"`
	Time    time.Time     `json:"time"`
	Elapsed time.Duration `json:"elapsed_ns"` // since the previous sample (0 for the baseline)
	// Took is how long reading the sample took: the processes and the root cgroup are read up to this far
	// apart, which bounds how well they can agree.
	Took  time.Duration `json:"took_ns"`
	Node  Node          `json:"node"`
	Procs []ProcSample  `json:"procs"`
	// New lists processes first seen (or first known from their exit) in this sample.
	New []ProcInfo `json:"new,omitempty"`
	// Exited lists IDs of processes that ended in this interval.
	Exited []int64 `json:"exited,omitempty"`
	// SelfBPF is the cumulative run time and count of tare's BPF programs loaded at this sample, since
	// statistics were enabled or the program loaded (bpfstats); nil without BPF run-time statistics.
	SelfBPF []bpfstats.Stat `json:"self_bpf,omitempty"`
}

// Meta describes a measurement: where and how it was taken.
type Meta struct {
	Host         string        `json:"host"`
	Kernel       string        `json:"kernel"`
	CPUs         int           `json:"cpus"`
	ClockTicks   int           `json:"clock_ticks"`
	Interval     time.Duration `json:"interval_ns"`
	Detail       time.Duration `json:"detail_interval_ns"`
	Duration     time.Duration `json:"duration_ns"`
	Started      time.Time     `json:"started"`
	CPUSource    string        `json:"cpu_source"`  // "schedstat" (no taskstats), "schedstat+taskstats", or that + ", bpf task iterator (<pass> pass) skips idle processes"
	ExitSource   string        `json:"exit_source"` // taskstats+tracepoints, taskstats+connector, taskstats or cutime
	TareVersion  string        `json:"tare_version"`
	SelfPID      int           `json:"self_pid"`
	Limitations  []string      `json:"limitations,omitempty"`
	Interrupted  bool          `json:"interrupted,omitempty"`
	CgroupSource string        `json:"cgroup_source,omitempty"` // the file (v1) or hierarchy (v2) Node.TasksCPUNs is read from
	// NodeReference is what Node.TasksCPUNs counts; "" in recordings of earlier tares (see BusyReference).
	NodeReference Reference `json:"node_reference,omitempty"`
	KernelHZ      int       `json:"kernel_hz,omitempty"`           // CONFIG_HZ, the scheduler tick that /proc/stat samples
	IRQTime       bool      `json:"irq_time_accounting,omitempty"` // irq time is not inside task time
	// TicklessIdle: /proc/stat's idle and iowait come from the kernel's tickless idle clock (CONFIG_NO_HZ),
	// exact but for their 10 ms print units. false in recordings of earlier tares.
	TicklessIdle bool `json:"tickless_idle,omitempty"`
	// KernelConfig is the file KernelHZ and IRQTime were read from, or KernelConfigAssumed when there was
	// none ("" in recordings of earlier tares).
	KernelConfig string `json:"kernel_config,omitempty"`
	// BootID is the kernel's random boot ID: nodes that report the same one share a kernel (and its
	// node busy). "" in recordings of earlier tares.
	BootID string `json:"boot_id,omitempty"`
	// PIDNamespace is the PID namespace tare saw processes in: nodes on one kernel that report the same
	// one each see the others' processes.
	PIDNamespace string `json:"pid_namespace,omitempty"`
	// PodRoot is Options.PodRoot: pods under another cgroup root were grouped as another node's.
	PodRoot string `json:"pod_cgroup_root,omitempty"`
}

// DetailSample reports whether the sample numbered seq reads memory, I/O and threads: every Detail/Interval
// samples from the baseline on (the final sample of a window does too).
func (m Meta) DetailSample(seq int) bool {
	every := 1
	if m.Interval > 0 && m.Detail > m.Interval {
		every = int(m.Detail / m.Interval)
	}
	return seq%every == 0
}
