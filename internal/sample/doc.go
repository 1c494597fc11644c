// Package sample reads the node's CPU, memory and I/O counters and turns them into a series of samples:
// node CPU from /proc/stat, per-process CPU from nanosecond counters (taskstats, or per-thread schedstat
// without CAP_NET_ADMIN), memory from smaps_rollup, disk bytes from /proc/PID/io, and the CPU of processes
// that start and end between two samples from taskstats exit notifications and proc-connector exec events
// (or the parents' cutime/cstime without root). The measure verb drives a Sampler; the record package
// stores its samples and the summary package analyses them.
package sample
