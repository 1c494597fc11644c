// Package bpfstats measures the CPU that tare's own BPF programs use inside the kernel: the time the
// kernel counts in each program's bpf_prog_info (run_time_ns, run_cnt) while run-time statistics are on.
// That time is part of tare's cost but is not in tare's user and system time when the program runs in
// another task: the exec tracepoints (exectrace) run in every process that forks or execs, the block I/O
// tracepoints (blockio) in whoever submits, issues or completes a request. The task iterator passes
// (taskiter) are the exception: they run inside tare's own read() of the iterator, so their time is
// already in tare's system time; callers report them apart (Stat.InSelf) and do not add them again.
//
// The kernel charges a tracepoint program's time to the task it ran in, so the exec tracer's time also
// sits in the CPU of the exec'ing processes, and tare credits it to their groups. tare does not subtract
// it: the kernel does not say which task each run was in, only the program's total. The figure is shown
// beside tare's own CPU so a reader can judge how much of the groups' CPU it could be.
//
// Statistics are off by default because measuring every run costs two clock reads. Enable turns them on
// for the whole machine (every program's, not only tare's) until its Closer is closed; BPF_ENABLE_STATS
// needs CAP_SYS_ADMIN (CAP_BPF is not enough), and without it Enable returns an error matching
// ErrNotSupported and tare reports no BPF time. Programs loaded before Enable report only what they ran
// afterwards, so callers take deltas, not totals.
//
// tare measure (sample, summary) and the agent call it; it imports cilium/ebpf and, of tare's,
// only kernel (its ErrNotSupported, the one meaning of "this kernel cannot").
//
// Imports: kernel
package bpfstats
