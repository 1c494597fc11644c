// Package exectrace follows process starts from the kernel's scheduler tracepoints: for every new process
// (a fork that is not a thread) and every exec, its parent, its start and its redacted command line, kept
// in a kernel.ExecTable for the sampler to name processes that live a few milliseconds. It does what the
// proc connector watcher (kernel.ExecWatcher) does, at a fraction of the cost: the connector wakes tare at
// every event, and tare then opens and reads /proc/PID/cmdline of each new program (about 300 µs of tare's
// CPU per process started, measured by make bench-agent), where here two BPF programs copy the command
// line from the process's own memory into a ring buffer, in the kernel, and nothing wakes tare: Sync drains
// the buffer when the sampler samples.
//
// The BPF programs (exectrace.bpf.c) run on tp_btf/sched_process_fork, in the parent once the child exists,
// and tp_btf/sched_process_exec, in the process once its new program is loaded. A fork's record carries the
// parent's command line (the child shares it until it execs), an exec's the new program's. The first 1,024
// bytes of a command line are copied (a longer one ends in " …"); an argument area not in memory (swapped
// out) gives an empty one, and the process is named by its comm. PIDs are those of the initial PID
// namespace. The ring buffer holds Options.BufferBytes (2 MiB: about 1,900 records) between two Syncs;
// records that do not fit are counted, and Lost says how many.
//
// It needs kernel BTF (/sys/kernel/btf/vmlinux), Linux 5.8 or later (ring buffer), and CAP_BPF with
// CAP_PERFMON, or CAP_SYS_ADMIN; without them Open returns an error matching ErrNotSupported and the sampler
// uses the proc connector. Nothing is pinned: the programs detach at Close or when the process exits.
//
// It imports cilium/ebpf and, of tare's, kernel (the table, the privilege check), redact, and bpfstats (Tracer.Programs: the programs run in the forking or exec'ing process, so their time is not in tare's CPU but in that process's).
//
// The compiled objects (exectrace_bpfel.o, exectrace_bpfeb.o) and Go bindings are committed, so building tare
// needs no C compiler. After changing the C source, regenerate them with clang and llvm-strip installed
// (Debian: apt-get install clang llvm) by running go generate in this directory.
//
// Imports: bpfstats, kernel, redact
package exectrace
