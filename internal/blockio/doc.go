// Package blockio counts block I/O by process: for each process (thread group), cgroup, disk and direction,
// the requests and bytes completed and two log2 histograms of microseconds, the device time (issue to the
// driver → completion) and the queue time (creation of the request → issue). tare measure and the agent
// call it to say which process did a node's disk I/O and how long the disk took; with ErrNotSupported they
// fall back to the byte counts of /proc/PID/io, which have no requests or latencies, and say so.
//
// Four BPF programs on the block layer's BTF tracepoints (tp_btf: no kprobes) do the counting, in the
// kernel: block_io_start, block_rq_insert and block_rq_issue note, in a table keyed by the request's
// address, who created each request and when; block_rq_complete charges the request to that record.
// Nothing is sent per event; Read copies the records. Both tables are bounded: requests in flight in an LRU
// hash of 16384, records in a hash of Options.MaxRecords that counts, rather than hides, what it refuses.
//
// A request is charged to the process that was current when the request was created (block_io_start, where
// a bio becomes a request, in the task that submitted the bio), as biosnoop does. That is the process that
// did the I/O for reads and for direct or synchronous writes, but not for buffered writes: writeback is
// submitted by a kernel flusher thread (kworker/u*:*, PID of the kworker) and charged to it, and so are
// journal commits (jbd2). Readahead is charged to the reader that triggered it. A request the tracer did not
// see created (a flush sequence, a request in flight at Open) is charged to the task current at its
// insertion or issue, often a kblockd kworker. PIDs are those of the initial PID namespace.
//
// Limits: the histograms' resolution is a factor of two (a quantile is known to lie in [2^(k-1), 2^k) µs);
// the device time includes the driver and, on a virtual machine, the host; requests on a partition count
// under the whole disk; stacked devices (dm, md) are seen at the disk that does the I/O, bio-based ones
// (zram, some dm targets) not at all. On this project's test VM, /proc/diskstats sometimes counts up to
// about 1% more completed reads than the kernel's block_rq_complete tracepoint fires (perf stat on the
// tracepoint shows the same shortfall), so totals can fall short of the disk's by that much.
//
// It needs kernel BTF (/sys/kernel/btf/vmlinux), Linux 6.5 or later (block_io_start), and CAP_BPF with
// CAP_PERFMON, or CAP_SYS_ADMIN; without them Open returns an error matching ErrNotSupported that says what
// to do. Nothing is pinned: the programs detach at Close or when the process exits, Ctrl-C included.
//
// It imports cilium/ebpf and, of tare's, kernel (whether this process may load BPF) and bpfstats (Tracer.Programs: they run in the tasks doing the I/O, so their time is not in tare's CPU). A new counter goes in blockio.bpf.c's struct stat, then
// in record (tracer.go) and Record (snapshot.go).
//
// The BPF program is blockio.bpf.c. Its compiled objects (blockio_bpfel.o, blockio_bpfeb.o) and Go bindings
// (blockio_bpfel.go, blockio_bpfeb.go) are committed, so building tare needs no C compiler. After changing
// the C source, regenerate them with clang and llvm-strip installed (Debian: apt-get install clang llvm) by
// running, in this directory:
//
//	go generate
//
// which runs bpf2go at the cilium/ebpf version of go.mod. The C source includes no headers: the kernel
// structures it reads are declared in it with CO-RE relocations, so no vmlinux.h is needed.
//
// Imports: bpfstats, kernel
package blockio

//go:generate go run github.com/cilium/ebpf/cmd/bpf2go@v0.22.0 -cc clang -cflags "-O2 -g -Wall -Werror" -no-global-types -type key -type stat blockio blockio.bpf.c
