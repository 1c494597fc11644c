// Package sample reads the node's CPU, memory and I/O counters and turns them into a series of samples. It
// owns the readers of /proc, /sys and cgroup files (each under an injected root, split into a read and a
// pure parse) and the engine that attributes CPU to processes between two samples.
//
// Where things live:
//   - sampler.go: one sample's pass (which processes to read, new ones, ended ones); loop.go: the loop.
//   - ledger.go: the one ledger of children's CPU (cutime+cstime) that keeps CPU of ended process trees from
//     being counted twice or counted from before the window.
//   - nodebusy.go, node.go, cgroupv2.go: node counters and the one definition of node busy (BusyMeter), with
//     its reference (cgroup v1 cpuacct, the exact cgroup v2 sum, or /proc/stat).
//   - taskstats*.go, connector.go: exits and execs from netlink; activity.go: the BPF task iterator filter
//     (internal/taskiter) that skips processes that did not run.
//   - procinfo.go, procstat.go, procio.go, threads.go, resources.go: per-process and node files;
//     blockingread.go: reads of files that can hang behind a process's memory-map lock, with a deadline.
//   - kernelconfig.go: tick rate, IRQ time accounting, host name and release of the measured host.
//
// The session package (internal/session) drives a Sampler for measure, explain and experiment; the record
// package stores its samples and the summary package analyses them. A new kernel reader goes in a file
// named for the kernel file it reads, with a fixture under testdata/ and a fuzz target.
package sample
