// Package kernel reads the Linux kernel's accounts of processes and of the node, and nothing else: files
// of /proc and /sys, cgroup v1 and v2 hierarchies, taskstats over generic netlink, and the proc connector.
// It is procfs-like and reusable: it knows no samples, no attribution and no report. The sampler
// (internal/sample) is its main caller; the readers of recordings (record, explain) use its resource types,
// and taskiter tests against its taskstats client.
//
// Every reader of a file takes an injected root (a /proc, /sys or cgroup directory, never a fixed path;
// root.go's HostProc and HostSys are the one home of the machine's own, which the packages that import
// this one name) and is split into a read and a pure parse of the bytes read (ParseProcStat,
// ParseCgroupUsage, ...). Parse errors of files tare could read but not understand wrap ErrMalformed; a process that exited while it was
// read gives ErrGone; a feature the kernel lacks, ErrNotSupported (errors.go, malformed.go).
//
// Where things live, one file per kernel file or source:
//   - procstat.go (/proc/PID/stat), procinfo.go (a process's identity, and its detail: statm, smaps_rollup,
//     io), procio.go (io and /proc/PID/cgroup), threads.go (per-thread schedstat kept open), pids.go
//     (listing /proc), cmdline.go (finding a process by its command line), listener.go (the process
//     listening on a TCP port: /proc/net/tcp and /proc/PID/fd).
//   - node.go (/proc/stat, loadavg, pressure), resources.go (meminfo, vmstat, diskstats, net/dev and their
//     sysfs facts), linkmtu.go (a link's MTU, and whether a link is there), sysctl.go (/proc/sys
//     settings), cpulist.go (online CPUs), kernelconfig.go (CONFIG_HZ, IRQ time accounting, host name and
//     release).
//   - cgroupv2.go (the exact task time of a cgroup v2 hierarchy), cgroupusage.go (cpuacct.usage and
//     cpu.stat), cgroupmounts.go (which cgroup hierarchies are mounted where, from mountinfo), cgrouppaths.go (a
//     process's cgroup path remembered by its cgroups' IDs, checked against the directories' inode
//     numbers), workingset.go
//     (a memory cgroup's working set as the kubelet's eviction manager counts it).
//   - taskstats.go, taskstats_parse.go (per-process CPU queries and exit notifications),
//     taskstats_legacy.go (what some kernels' taskstats lack: ac_tgid before 5.19, CPU time without delay
//     accounting), connector.go (exec and fork events).
//   - rawio.go (raw system calls for reads that cannot block, and ReadBounded), pinned.go (files kept
//     open and re-read), blockingread.go (files whose read can block behind the process, such as cmdline
//     and smaps_rollup, read with ordinary system calls and a deadline, or without it for a process that is
//     Quiet: one thread asleep, which cannot hold its memory map's lock while it does not run).
//
// It imports nothing of tare's but internal/redact, which the command-line reader uses so that no secret
// leaves it. A new reader goes in a file named for the kernel file it reads: a read that takes the root, a
// pure parse, a table-driven test on a fixture captured from a real machine under testdata/ (say where in
// testdata/README.md), and a fuzz target for the parse.
//
// Imports: redact
package kernel
