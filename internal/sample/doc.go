// Package sample is the attribution engine: it turns the kernel's counters, read through internal/kernel,
// into a series of samples that say which process used how much CPU, memory and I/O between two ticks,
// and measures node busy over them. It owns the sample model (Sample, ProcSample, ProcInfo, Meta, Node),
// which the record, summary, explain and compare packages read.
//
// Where things live:
//   - sampler.go: the cycle: Sampler, New, Close and one sample's pass (which processes to read, in what
//     order); loop.go: the loop of samples.
//   - lifecycle.go: a process's first sight and later readings; exits.go: its end, from an exit
//     notification, from its absence in /proc, or a PID reused.
//   - ledger.go: the one ledger of children's CPU (cutime+cstime) that keeps CPU of ended process trees from
//     being counted twice or counted from before the window.
//   - activity.go: the BPF task iterator filter (internal/taskiter) that skips processes that did not run;
//     refresh.go: the cadence of the slower detail reads.
//   - node.go: the node's reading, and which task-time reference node busy is read from (cgroup v1
//     cpuacct, the exact cgroup v2 sum, or /proc/stat); nodebusy.go: the one definition of node busy
//     (BusyMeter).
//   - host.go: the measured host's name and kernel configuration in Meta; model.go: the sample types.
//
// It imports internal/kernel for every read of the machine, internal/taskiter for the activity filter,
// internal/exectrace for exec notifications, internal/bpfstats for the BPF programs' own time and
// internal/classify to name processes. The
// session package (internal/session) drives a Sampler for measure, explain and experiment; the record
// package stores its samples and the summary package analyses them. A new kernel reader goes in
// internal/kernel, not here; a new figure of a sample goes in model.go with the pass that fills it.
//
// Imports: bpfstats, classify, exectrace, kernel, taskiter
package sample
