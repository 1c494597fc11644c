//go:build ignore

// SPDX-License-Identifier: (MIT OR GPL-2.0-only)
//
// thread_groups is a BPF task iterator attached to tare's own process (a TGID filter), so that one read
// calls it once, at tare's leader thread; from that call it walks every process of the machine with the
// open-coded task iterator (BPF_TASK_ITER_ALL_PROCS: the process list, no PID lookups) and writes a struct
// group into out[] for each thread group whose CPU time moved since the previous read (every group when
// emit_all is set); n_out is how many. Generated into Go by bpf2go (see doc.go); needs Linux 6.7
// (open-coded task iterators) and kernel BTF for CO-RE.
//
// No headers: the few kernel types are declared here with preserve_access_index, so that libbpf-style CO-RE
// relocations fit them to the running kernel's layout, and the few helpers by number.

typedef unsigned int __u32;
typedef unsigned long long __u64;

#define SEC(name) __attribute__((section(name), used))
#define __ksym __attribute__((section(".ksyms")))
#define __uint(name, val) int(*name)[val]
#define __type(name, val) typeof(val) *name
#define CORE __attribute__((preserve_access_index))

// From include/uapi/linux/bpf.h, include/linux/sched.h and kernel/bpf/task_iter.c.
#define BPF_MAP_TYPE_ARRAY 2
#define BPF_MAP_TYPE_TASK_STORAGE 29
#define BPF_F_MMAPABLE 1024
#define BPF_F_NO_PREALLOC 1
#define BPF_LOCAL_STORAGE_GET_F_CREATE 1
#define BPF_TASK_ITER_ALL_THREADS 1
#define PF_KTHREAD 0x00200000

// Bits of group.flags (taskiter.go decodes them).
#define GROUP_KERNEL 1  // a kernel thread
#define GROUP_INEXACT 2 // a thread exited during the walk: cpu_ns may miss it, the next read reports again

struct seq_file;

struct bpf_iter_meta {
	struct seq_file *seq;
} CORE;

struct signal_struct {
	int nr_threads;
	__u64 sum_sched_runtime; // runtime of the threads that exited
} CORE;

struct sched_entity {
	__u64 sum_exec_runtime;
} CORE;

struct pid_namespace;

struct upid {
	int nr;
	struct pid_namespace *ns;
} CORE;

struct pid {
	unsigned int level;
	struct upid numbers[];
} CORE;

struct task_struct {
	unsigned int flags;
	struct sched_entity se;
	int exit_state;
	int pid;
	int tgid;
	struct task_struct *real_parent;
	struct task_struct *group_leader;
	struct pid *thread_pid;
	__u64 start_boottime;
	struct signal_struct *signal;
} CORE;

struct bpf_iter__task {
	struct bpf_iter_meta *meta;
	struct task_struct *task;
} CORE;

struct bpf_iter_task {
	__u64 __opaque[3];
} __attribute__((aligned(8)));

static void *(*bpf_map_lookup_elem)(void *map, const void *key) = (void *)1;
static long (*bpf_probe_read_kernel)(void *dst, __u32 size, const void *unsafe_ptr) = (void *)113;
static struct task_struct *(*bpf_get_current_task_btf)(void) = (void *)158;
static void *(*bpf_task_storage_get)(void *map, struct task_struct *task, void *value, __u64 flags) = (void *)156;

extern int bpf_iter_task_new(struct bpf_iter_task *it, struct task_struct *task, unsigned int flags) __ksym;
extern struct task_struct *bpf_iter_task_next(struct bpf_iter_task *it) __ksym;
extern void bpf_iter_task_destroy(struct bpf_iter_task *it) __ksym;

// group is one record of the iterator's output, in the machine's byte order.
struct group {
	__u32 tgid;
	__u32 ppid;
	__u64 cpu_ns;   // live threads' sum_exec_runtime plus the exited threads' (signal->sum_sched_runtime)
	__u64 start_ns; // start_boottime: ns since boot, suspend included
	__u32 threads;
	__u32 flags;
};

// last is what the previous read reported for a thread group, kept on the group leader's task_struct, so
// that it goes when the process goes and a reused PID starts afresh.
struct last {
	__u64 cpu_ns;
	__u64 seen;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct last);
} last_cpu SEC(".maps");

// upid_at returns a task's PID as seen from the PID namespace at level (0 for the initial namespace),
// with that namespace; nr is 0 when the task is not in a namespace that deep.
static __attribute__((always_inline)) struct upid upid_at(struct task_struct *t, unsigned int level)
{
	struct upid u = {};
	struct pid *p = t->thread_pid;

	if (!p || p->level < level || level > 32)
		return u;
	bpf_probe_read_kernel(&u, sizeof(u), &p->numbers[level]);
	return u;
}

// emit_all makes a read report every thread group, moved or not; user space sets it between reads.
volatile __u32 emit_all;

// The records of a read: out[0:n_out]. overflow counts the groups left out for want of room (their state
// is not updated, so the next read reports them). MAX_OUT records take 2 MiB, memory-mapped by user space.
#define MAX_OUT 65536
volatile __u32 n_out;
volatile __u32 overflow;
// max_out is the room of out[] a pass may use: MAX_OUT, less only in tests (set before the load).
volatile const __u32 max_out = MAX_OUT;
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, MAX_OUT);
	__type(key, __u32);
	__type(value, struct group);
} out SEC(".maps");

// emit writes the record of the thread group led by leader, whose live threads ran cpu_ns and number
// threads, when its CPU time moved since the previous read (or emit_all); level is the reader's PID
// namespace level. dead is signal->sum_sched_runtime as read before its threads were added up.
static __attribute__((noinline)) int emit(struct task_struct *leader, __u64 cpu_ns, __u32 threads, __u64 dead, unsigned int level)
{
	struct group g = {};
	struct last *last;
	struct upid self, parent;
	struct group *slot;
	__u32 i, inexact;

	if (!leader)
		return 0;
	g.cpu_ns = cpu_ns + dead;
	g.threads = threads;
	// A thread that exits during the walk moves its runtime into sum_sched_runtime and leaves the thread
	// list together: the sum was read first, so the walk can miss it but never count it twice.
	inexact = leader->signal->sum_sched_runtime != dead;
	last = bpf_task_storage_get(&last_cpu, leader, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (last && last->seen && last->cpu_ns == g.cpu_ns && !emit_all)
		return 0;
	// PIDs as the reader sees them, as /proc shows them: a process outside the reader's PID namespace
	// has no number there and is left out.
	self = upid_at(leader, level);
	if (!self.nr)
		return 0;
	parent = upid_at(leader->real_parent->group_leader, level); // the parent may be a thread
	g.tgid = self.nr;
	if (parent.ns == self.ns)
		g.ppid = parent.nr; // 0 when the parent is outside the namespace, as getppid(2) says
	g.start_ns = leader->start_boottime;
	g.flags = (leader->flags & PF_KTHREAD ? GROUP_KERNEL : 0) | (inexact ? GROUP_INEXACT : 0);
	i = n_out;
	if (i >= max_out || i >= MAX_OUT) {
		overflow++;
		return 0; // the state is left as it was: the next read reports the group
	}
	slot = bpf_map_lookup_elem(&out, &i);
	if (!slot)
		return 0;
	*slot = g;
	n_out = i + 1;
	if (last && !inexact) {
		last->cpu_ns = g.cpu_ns;
		last->seen = 1;
	}
	return 0;
}

SEC("iter/task")
int thread_groups(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;
	struct task_struct *t, *leader = 0;
	struct bpf_iter_task it;
	unsigned int level;
	__u64 cpu_ns = 0, dead = 0;
	__u32 threads = 0;
	int tgid = -1;

	// Called for each thread of tare (the TGID filter), then once with no task: acts at the leader alone.
	if (!task || task->pid != task->tgid)
		return 0;
	n_out = 0;
	overflow = 0;
	level = bpf_get_current_task_btf()->thread_pid->level;
	// Every thread of the machine, process by process: a process's leader, then its other threads. A
	// group is written when the walk leaves it.
	bpf_iter_task_new(&it, 0, BPF_TASK_ITER_ALL_THREADS);
	while ((t = bpf_iter_task_next(&it))) {
		if (t->tgid != tgid) {
			emit(leader, cpu_ns, threads, dead, level);
			leader = t->pid == t->tgid ? t : 0; // a process's walk starts at its leader
			tgid = t->tgid;
			dead = t->signal->sum_sched_runtime;
			cpu_ns = 0;
			threads = 0;
		}
		cpu_ns += t->se.sum_exec_runtime;
		threads++;
	}
	bpf_iter_task_destroy(&it);
	emit(leader, cpu_ns, threads, dead, level);
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
