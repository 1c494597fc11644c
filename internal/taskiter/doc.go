// Package taskiter reads the CPU time of every thread group on the machine in one pass of a BPF task
// iterator, and reports only the thread groups whose CPU time moved since the previous pass. The sampler
// (internal/sample) uses it as an activity filter: a process the iterator reports as unchanged did not run,
// so its counters need no reading in that sample. Its cost follows the number of tasks (a few hundred
// nanoseconds each, in the kernel) instead of one or more system calls per process.
//
// Each record the programs write also describes the group's leader (Group.Desc, record.h and describe.h):
// its name, state, owner, its reaped children's times and, for a group of one thread, its I/O counters,
// what /proc/PID/stat, the owner of /proc/PID and /proc/PID/io say (Group.ProcStat), and the IDs of its
// cgroups (Description.CgroupKey), so that the sampler reads a process it first sees from /proc for its
// command line and executable, and /proc/PID/cgroup once for the processes of one cgroup. The groups
// user space completes after a bpf-iter pass (openGroups) have none.
//
// Two passes give the same output (Group records, the same filter), chosen once by Open, cheapest first:
//
//   - open-coded (taskiter.bpf.c, Linux 6.7 or later): its iterator is attached to tare's own process (a
//     TGID filter, 6.1; the link is made with BPF_LINK_CREATE in ownprocess.go, as cilium/ebpf's
//     AttachIter takes no filter), so a read calls it for tare's few threads only. At tare's leader it
//     walks every thread of the machine with the open-coded task iterator (bpf_iter_task_new with
//     BPF_TASK_ITER_ALL_THREADS, 6.7), which goes process by process, a leader then its other threads, along
//     the kernel's lists: no PID lookup per task, no program call per task. It adds up each group's threads
//     as it goes and writes the group when the walk leaves it, if its total moved since the previous read:
//     the last total is kept, as bpf-iter keeps it, in the group's slot of an array indexed by TGID modulo
//     16,384, or in a hash map when another live group holds that slot (the leader's start time tells a
//     reused TGID). It kept it in task storage on the leader (BPF_MAP_TYPE_TASK_STORAGE, 5.11) before:
//     once a second, with the task's storage, its cache and the value cold, bpf_task_storage_get was a
//     quarter of tare's steady CPU at 3,000 idle processes. The records go into a memory-mapped array map
//     (BPF_F_MMAPABLE, 5.5; 65,536 records of 120 bytes, 7.5 MiB) that user space reads after the read(2) returns; a pass
//     with more moved groups than that says it is incomplete (ErrIncomplete), and the groups left out come
//     in the next pass. It also uses bpf_get_current_task_btf (5.11), and bpf_rdonly_cast (6.2) to read
//     the tasks through untrusted pointers: through trusted ones the verifier looked up by name, in a linear
//     search of the kernel's BTF, whether each pointer field it loads on each path is trusted or RCU
//     protected (btf_nested_type_is_trusted): 46 of the 53 ms of the program's verification on 6.18,
//     6 ms since. Entries of ended groups in either
//     pass's hash map are removed from user space every 64 passes (iter.go's collect). The iterator walks
//     every task of the machine, so the pass reports only those of the reader's PID namespace (a task of
//     another container's namespace has a number at the same depth, in its own namespace). Its verifier
//     walks about 2,000 instructions (1,800 and 45 ms on 6.18 before that check; 2,900 and 73 ms with task
//     storage): the state's lookups are
//     two global functions (moved, remember), verified once each, since inlined into the walk's loop they
//     made it 9,700 and 150 ms. Before, the kernel walked the tasks by PID and called the program for each
//     (get_pid_task and pid_nr_ns for every task, half the pass's cost); a pass at 3,000 idle processes
//     took 0.93 ms of CPU in a tight loop, now 0.17 ms.
//   - bpf-iter (bpfiter.bpf.c, Linux 5.8 or later): for kernels before 6.7 (AL2023 and Bottlerocket 6.1,
//     COS and Flatcar 6.6, Ubuntu 22.04 5.15, RHEL 9 5.14). The kernel shows it every thread, in the order
//     of their IDs, so a group's threads come scattered; it adds them up in its slot of an array indexed by
//     TGID modulo 16,384 (an array's lookups are inlined: with a hash map of every group, its lookups were a
//     third of the pass), or, when another live group holds that slot, in a hash map keyed by TGID, and
//     writes the group at its last thread (as many seen as signal->nr_threads). A thread born behind the
//     walk, or ended before its visit, leaves its group open: the program lists open groups (open_keys), and
//     after the pass user space reports them as moved, inexact (iter.go's openGroups). Only when more than 512 groups are open at once, or
//     the hash map is full, does a pass say it is incomplete (ErrIncomplete), and the caller treats every group
//     as moved for that sample. Entries of ended groups are removed from user space every 64 passes. It needs of the kernel: the iter/task program type, bpf_seq_write and bpf_iter_meta's
//     session_id (all 5.8, with bpf_iter itself); bpf_map_lookup_elem and bpf_map_update_elem on an array
//     and on a hash map with BPF_F_NO_PREALLOC (3.19, 4.6), bpf_get_current_task (4.8), bpf_probe_read_kernel (5.5), global
//     variables (5.2), BTF pointers in tracing programs (5.5); no loop, no kfunc, no task storage. Before
//     5.11 its maps (16,384 entries each, about 1.4 MB for the array and 2 MB for the hash charged at
//     creation) counts against RLIMIT_MEMLOCK: the
//     loader lifts the limit first where the kernel charges it (memlock.go, with cilium/ebpf's
//     rlimit.RemoveMemlock, which needs CAP_SYS_RESOURCE there and does nothing on 5.11 or later; tested
//     only on 6.18, where the pass loads under a 64 KiB limit that tare leaves as it was). A
//     group comes once a pass: a thread born behind the walk after its group was written is left to the
//     next pass. Its verifier processes about 1,500 instructions (37 ms on 6.18, 2026-11-29; 750 before the array):
//     writing the open groups from the program's last call, in a loop of 512, cost some 50,000 (80-140 ms)
//     at every load.
//
// How that was checked, by reading only: bcc's "BPF Features by Linux Kernel Version" (the BPF iterator
// 5.8; bpf_seq_write, listed as 5.7, came in the same series; bpf_probe_read_kernel 5.5;
// bpf_get_current_task 4.8; hash maps 3.19), and the kernel's task_iter.c and bpf_iter selftests as of 5.8
// (every task of the reader's PID namespace, threads included, in the order of their IDs; bpf_iter_meta
// with session_id; a last call with a NULL task). The program was loaded, verified and tested on Linux 6.18
// alone: no 5.8 to 6.6 kernel was at hand, and their verifiers are stricter in places. It avoids what is
// known to differ: no arithmetic on BTF pointers (pointers are read into scalars with
// bpf_probe_read_kernel first), no kfunc, no loop.
//
// Each pass can be forced by the environment variable TARE_TASK_PASS (PassEnv: open-coded, bpf-iter or
// proc, the last meaning no pass); a forced pass that cannot load is an error. Tests and benchmarks use it.
//
// Every pass needs kernel BTF (/sys/kernel/btf/vmlinux, for CO-RE) and CAP_BPF with CAP_PERFMON, or
// CAP_SYS_ADMIN; without them Open returns an error matching ErrNotSupported and callers fall back to
// reading every process.
//
// It imports cilium/ebpf and, of tare's, kernel (whether this process may load BPF) and bpfstats (Iter.Programs: the pass runs in the caller's read(2), so its run time is inside tare's system time); the sampler is its only caller. A new field of a thread
// group goes in the record both programs write (record.h) and group.go's parse, with recordSize.
//
// The BPF programs are taskiter.bpf.c and bpfiter.bpf.c. Their compiled objects (taskiter_bpfel.o,
// bpfiter_bpfel.o and the big-endian ones) and Go bindings (taskiter_bpfel.go, bpfiter_bpfel.go, ...) are
// committed, both embedded, so building tare needs no C compiler. After
// changing the C source, regenerate them with clang and llvm-strip installed (Debian: apt-get install clang
// llvm) by running, in this directory:
//
//	go generate
//
// which runs bpf2go at the cilium/ebpf version of go.mod. The C source includes no kernel headers, only its
// own two (record.h, the record both programs write; describe.h, the description of a group's leader): the
// kernel structures it reads are declared in it with CO-RE relocations, so no vmlinux.h is needed.
//
// Imports: bpfstats, kernel
package taskiter

//go:generate go run github.com/cilium/ebpf/cmd/bpf2go@v0.22.0 -cc clang -cflags "-O2 -g -Wall -Werror" -no-global-types taskiter taskiter.bpf.c
//go:generate go run github.com/cilium/ebpf/cmd/bpf2go@v0.22.0 -cc clang -cflags "-O2 -g -Wall -Werror" -no-global-types bpfiter bpfiter.bpf.c
