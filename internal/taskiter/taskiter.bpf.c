//go:build ignore

// SPDX-License-Identifier: (MIT OR GPL-2.0-only)
//
// thread_groups is a BPF task iterator attached to tare's own process (a TGID filter), so that one read
// calls it once, at tare's leader thread; from that call it walks every process of the machine with the
// open-coded task iterator (BPF_TASK_ITER_ALL_THREADS: the process list, no PID lookups) and writes a struct
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
#define BPF_MAP_TYPE_HASH 1
#define BPF_MAP_TYPE_ARRAY 2
#define BPF_F_MMAPABLE 1024
#define BPF_F_NO_PREALLOC 1
#define BPF_NOEXIST 1
#define BPF_TASK_ITER_ALL_THREADS 1
#define PF_KTHREAD 0x00200000

#include "record.h"

struct seq_file;

struct bpf_iter_meta {
	struct seq_file *seq;
} CORE;

struct signal_struct {
	int nr_threads;
	__u64 sum_sched_runtime; // runtime of the threads that exited
	__u64 cutime;
	__u64 cstime;
	struct task_io_accounting ioac; // what exited threads did
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
	unsigned int __state;
	unsigned int flags;
	struct sched_entity se;
	int exit_state;
	int pid;
	int tgid;
	struct task_struct *real_parent;
	struct task_struct *group_leader;
	struct pid *thread_pid;
	__u64 start_boottime;
	const struct cred *real_cred;
	char comm[16];
	struct signal_struct *signal;
	struct task_io_accounting ioac;
	struct css_set *cgroups;
} CORE;

struct bpf_iter__task {
	struct bpf_iter_meta *meta;
	struct task_struct *task;
} CORE;

struct bpf_iter_task {
	__u64 __opaque[3];
} __attribute__((aligned(8)));

static void *(*bpf_map_lookup_elem)(void *map, const void *key) = (void *)1;
static long (*bpf_map_update_elem)(void *map, const void *key, const void *value, __u64 flags) = (void *)2;
static long (*bpf_probe_read_kernel)(void *dst, __u32 size, const void *unsafe_ptr) = (void *)113;
static struct task_struct *(*bpf_get_current_task_btf)(void) = (void *)158;

// bpf_rdonly_cast (Linux 6.2) returns its argument as an untrusted pointer to the kernel type btf_id; the
// verifier inlines it to a move. Loads of pointer fields through an untrusted pointer are checked as reads
// that may fault, and nothing more: through a trusted one (the iterator's tasks, the current task) the
// verifier looks up, for each such load on each path it walks, whether the field's type is trusted or RCU
// protected, by name, in a linear search of the kernel's BTF (btf_nested_type_is_trusted): 46 of the 53 ms
// of the program's verification on 6.18, at every start. The pass only reads through these pointers.
extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym;
#define UNTRUSTED_TASK(p) ((struct task_struct *)bpf_rdonly_cast((p), __builtin_btf_type_id(*(struct task_struct *)0, 1)))

extern int bpf_iter_task_new(struct bpf_iter_task *it, struct task_struct *task, unsigned int flags) __ksym;
extern struct task_struct *bpf_iter_task_next(struct bpf_iter_task *it) __ksym;
extern void bpf_iter_task_destroy(struct bpf_iter_task *it) __ksym;

#include "describe.h"


// last is what the previous read reported for a thread group, for its TGID in the initial PID namespace:
// in slots at the index tgid & SLOT_MASK, or, when another live group holds that slot, in groups. A slot
// of a group that ended is taken over by the next group that needs it; entries of groups that ended stay
// in groups until user space removes those the last pass did not visit (iter.go's collect).
struct last {
	__u32 tgid;     // the group whose state this is (0: none)
	__u32 seen;     // cpu_ns and start_ns hold a reported value
	__u64 cpu_ns;   // CPU time last reported
	__u64 start_ns; // the leader's start when last reported: a reused TGID is another process
	__u64 pass;     // the pass that last visited the group
};

// slots holds the state of most groups: an array, whose lookups the verifier inlines, 32 bytes a group in
// one block of memory (processes started one after another have neighbouring slots). It replaced task
// storage on the leader (bpf_task_storage_get), whose lookups were a quarter of tare's steady CPU at 3,000
// idle processes: a pass once a second finds the task's storage, its cache and the value cold.
#define NSLOTS (1 << 14)
#define SLOT_MASK (NSLOTS - 1)
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, NSLOTS);
	__type(key, __u32);
	__type(value, struct last);
} slots SEC(".maps");

// groups holds the state of the groups whose slot another live group holds.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 1 << 14);
	__type(key, __u32);
	__type(value, struct last);
} groups SEC(".maps");

// pass_seq counts the passes: the current one, while it runs.
volatile __u64 pass_seq;

// emit_all makes a read report every thread group, moved or not; user space sets it between reads.
volatile __u32 emit_all;

// find returns the state of the group key, or 0 when it has none yet.
static __attribute__((always_inline)) struct last *find(__u32 key)
{
	__u32 idx = key & SLOT_MASK;
	struct last *st = bpf_map_lookup_elem(&slots, &idx);

	if (st && st->tgid == key)
		return st;
	return bpf_map_lookup_elem(&groups, &key);
}

// place gives a group that has no state yet its slot, when no group visited in this pass or the one before
// holds it (a group that ended: every live group is visited by every pass), or else an entry of groups; it
// returns 0 when groups is full.
static __attribute__((always_inline)) struct last *place(__u32 key, __u64 pass)
{
	__u32 idx = key & SLOT_MASK;
	struct last fresh = {}, *st = bpf_map_lookup_elem(&slots, &idx);

	if (st && (!st->tgid || st->pass + 1 < pass)) {
		__builtin_memset(st, 0, sizeof(*st));
		st->tgid = key;
		return st;
	}
	fresh.tgid = key;
	bpf_map_update_elem(&groups, &key, &fresh, BPF_NOEXIST);
	return bpf_map_lookup_elem(&groups, &key);
}

// moved says whether the group key, whose leader started at start_ns and whose threads ran cpu_ns, moved
// since the previous read (or was not reported yet, or emit_all, or has no state because groups is full),
// and marks it visited by this pass. It and remember are global functions, verified once each with their
// arguments unknown: inlined into emit, which the verifier walks again at every turn of the walk's loop,
// their branches made the program's verification 9,700 instructions and 150 ms (1,800 and 45 ms now).
__attribute__((noinline)) int moved(__u32 key, __u64 start_ns, __u64 cpu_ns)
{
	__u64 pass = pass_seq;
	struct last *st = find(key);

	if (!st)
		st = place(key, pass);
	if (!st)
		return 1;
	st->pass = pass;
	return !st->seen || st->start_ns != start_ns || st->cpu_ns != cpu_ns || emit_all;
}

// remember keeps what this read reported for the group key.
__attribute__((noinline)) int remember(__u32 key, __u64 start_ns, __u64 cpu_ns)
{
	struct last *st = find(key);

	if (!st)
		return 0;
	st->cpu_ns = cpu_ns;
	st->start_ns = start_ns;
	st->seen = 1;
	return 0;
}

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

// The records of a read: out[0:n_out]. overflow counts the groups left out for want of room (their state
// is not updated, so the next read reports them). MAX_OUT records take 7.5 MiB, memory-mapped by user space.
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
	__type(value, struct record);
} out SEC(".maps");

// The reader's PID namespace, set at the start of each pass: its depth (0 for the initial namespace), and
// the namespace itself. The open-coded iterator walks every task of the machine, in every namespace.
volatile __u32 reader_level;
volatile __u64 reader_ns;

// emit writes the record of the thread group led by leader, whose live threads ran cpu_ns and number
// threads, when its CPU time moved since the previous read (or emit_all). dead is
// signal->sum_sched_runtime as read before its threads were added up.
static __attribute__((noinline)) int emit(struct task_struct *leader, __u64 cpu_ns, __u32 threads, __u64 dead)
{
	struct record r = {};
	struct group *g = &r.g;
	struct upid self, parent;
	struct record *slot;
	__u32 i, inexact, key;

	if (!leader)
		return 0;
	g->cpu_ns = cpu_ns + dead;
	g->threads = threads;
	g->start_ns = leader->start_boottime;
	// A thread that exits during the walk moves its runtime into sum_sched_runtime and leaves the thread
	// list together: the sum was read first, so the walk can miss it but never count it twice.
	inexact = leader->signal->sum_sched_runtime != dead;
	key = leader->tgid;
	if (!moved(key, g->start_ns, g->cpu_ns))
		return 0;
	// PIDs as the reader sees them, as /proc shows them: a process outside the reader's PID namespace
	// has no number there and is left out. A process of another namespace as deep (another container's)
	// has a number at that depth, in its own namespace: the namespace must be the reader's. Such a
	// process is remembered, so that the next pass passes it by unless it moved.
	self = upid_at(leader, reader_level);
	if (!self.nr || (__u64)self.ns != reader_ns) {
		remember(key, g->start_ns, g->cpu_ns);
		return 0;
	}
	parent = upid_at(leader->real_parent->group_leader, reader_level); // the parent may be a thread
	g->tgid = self.nr;
	if (parent.ns == self.ns)
		g->ppid = parent.nr; // 0 when the parent is outside the namespace, as getppid(2) says
	g->flags = (leader->flags & PF_KTHREAD ? GROUP_KERNEL : 0) | (inexact ? GROUP_INEXACT : 0);
	describe(leader, &r);
	i = n_out;
	if (i >= max_out || i >= MAX_OUT) {
		overflow++;
		return 0; // the state is left as it was: the next read reports the group
	}
	slot = bpf_map_lookup_elem(&out, &i);
	if (!slot)
		return 0;
	*slot = r;
	n_out = i + 1;
	if (!inexact)
		remember(key, g->start_ns, g->cpu_ns);
	return 0;
}

SEC("iter/task")
int thread_groups(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;
	struct task_struct *t, *leader = 0;
	struct bpf_iter_task it;
	struct task_struct *self;
	__u64 cpu_ns = 0, dead = 0;
	__u32 threads = 0;
	int tgid = -1;

	// Called for each thread of tare (the TGID filter), then once with no task: acts at the leader alone.
	if (!task || task->pid != task->tgid)
		return 0;
	n_out = 0;
	overflow = 0;
	pass_seq++;
	self = UNTRUSTED_TASK(bpf_get_current_task_btf());
	reader_level = self->thread_pid->level;
	reader_ns = (__u64)upid_at(self, reader_level).ns;
	// Every thread of the machine, process by process: a process's leader, then its other threads. A
	// group is written when the walk leaves it.
	bpf_iter_task_new(&it, 0, BPF_TASK_ITER_ALL_THREADS);
	while ((t = bpf_iter_task_next(&it))) {
		t = UNTRUSTED_TASK(t);
		if (t->tgid != tgid) {
			emit(leader, cpu_ns, threads, dead);
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
	emit(leader, cpu_ns, threads, dead);
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
