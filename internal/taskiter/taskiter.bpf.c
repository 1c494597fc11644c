//go:build ignore

// SPDX-License-Identifier: (MIT OR GPL-2.0-only)
//
// thread_groups is a BPF task iterator: one read of the iterator walks every task of the machine once and
// writes a struct group for each thread group whose CPU time moved since the previous read (every group
// when emit_all is set). Generated into Go by bpf2go (see doc.go); needs Linux 6.7 (open-coded task
// iterators) and kernel BTF for CO-RE.
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
#define BPF_MAP_TYPE_TASK_STORAGE 29
#define BPF_F_NO_PREALLOC 1
#define BPF_LOCAL_STORAGE_GET_F_CREATE 1
#define BPF_TASK_ITER_PROC_THREADS 2
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

static long (*bpf_probe_read_kernel)(void *dst, __u32 size, const void *unsafe_ptr) = (void *)113;
static long (*bpf_seq_write)(struct seq_file *m, const void *data, __u32 len) = (void *)127;
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

SEC("iter/task")
int thread_groups(struct bpf_iter__task *ctx)
{
	struct seq_file *seq = ctx->meta->seq;
	struct task_struct *task = ctx->task;
	struct task_struct *t;
	struct bpf_iter_task it;
	struct group g = {};
	struct last *last;
	struct upid self, parent;
	unsigned int level;
	__u64 dead;

	if (!task || task->pid != task->tgid)
		return 0; // threads are counted with their leader
	// Exited threads first: a thread that exits during the walk moves its runtime into sum_sched_runtime
	// and leaves the thread list together, so reading the sum first can miss it but never count it twice.
	dead = task->signal->sum_sched_runtime;
	if (task->signal->nr_threads == 1 && !task->exit_state) {
		// The live leader is the only thread (most processes): no walk.
		g.cpu_ns = task->se.sum_exec_runtime;
		g.threads = 1;
	} else {
		bpf_iter_task_new(&it, task, BPF_TASK_ITER_PROC_THREADS);
		while ((t = bpf_iter_task_next(&it))) {
			g.cpu_ns += t->se.sum_exec_runtime;
			g.threads++;
		}
		bpf_iter_task_destroy(&it);
	}
	g.cpu_ns += dead;
	if (task->signal->sum_sched_runtime != dead)
		g.flags |= GROUP_INEXACT;

	last = bpf_task_storage_get(&last_cpu, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (last && last->seen && last->cpu_ns == g.cpu_ns && !emit_all)
		return 0;
	// PIDs as the reader sees them: the iterator walks the tasks of the reader's PID namespace (that of the
	// process reading it), and so does that process's /proc.
	level = bpf_get_current_task_btf()->thread_pid->level;
	self = upid_at(task, level);
	if (!self.nr)
		return 0;
	parent = upid_at(task->real_parent->group_leader, level); // the parent may be a thread
	g.tgid = self.nr;
	if (parent.ns == self.ns)
		g.ppid = parent.nr; // 0 when the parent is outside the namespace, as getppid(2) says
	g.start_ns = task->start_boottime;
	if (task->flags & PF_KTHREAD)
		g.flags |= GROUP_KERNEL;
	// A full buffer refuses the record; the kernel then shows this task again at the next read, so the
	// state is only updated once the record is out.
	if (bpf_seq_write(seq, &g, sizeof(g)))
		return 0;
	if (last && !(g.flags & GROUP_INEXACT)) {
		last->cpu_ns = g.cpu_ns;
		last->seen = 1;
	}
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
