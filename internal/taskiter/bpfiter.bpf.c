//go:build ignore

// SPDX-License-Identifier: (MIT OR GPL-2.0-only)
//
// thread_groups_58 is the task pass for kernels without open-coded task iterators (Linux 5.8 to 6.6): a
// bpf_iter task program, which the kernel calls once per *thread*, in the order of their IDs, so the threads
// of a group come scattered across the pass. It adds each thread's runtime to its group's entry of the
// groups map and writes the group (struct record, record.h, as taskiter.bpf.c does) when it has seen as many
// threads as the group has (signal->nr_threads): only if its CPU time moved since the previous pass, or it
// was not reported before, or emit_all is set. A group whose threads do not add up within the pass (one was
// born behind the walk before the group's last visit, or ended before its visit) is still open at the end:
// user space reads it from the open_keys list after the pass and reports it as moved, inexact. Only groups this cannot cover
// (the list or the map full) are counted in unfinished, which user space reads after the pass: such a pass
// cannot say which groups stayed idle, and the caller then treats every group as moved. A task the kernel
// shows after the pass's last call (born after the walk, to a reader reading on for its end of file) is
// left for the next pass: counted here, it could complete a group already written at the end.
//
// Needs Linux 5.8 (bpf_iter task programs, bpf_seq_write, the session_id of bpf_iter_meta) and kernel BTF
// for CO-RE; no kfunc, no task storage, no helper newer than 5.8. Maps: an array and a hash (3.19), globals
// (5.2); no loop.
// Generated into Go by bpf2go (see doc.go).

typedef unsigned int __u32;
typedef unsigned long long __u64;

#define SEC(name) __attribute__((section(name), used))
#define __uint(name, val) int(*name)[val]
#define __type(name, val) typeof(val) *name
#define CORE __attribute__((preserve_access_index))

// From include/uapi/linux/bpf.h and include/linux/sched.h.
#define BPF_MAP_TYPE_HASH 1
#define BPF_MAP_TYPE_ARRAY 2
#define BPF_F_NO_PREALLOC 1
#define BPF_NOEXIST 1
#define PF_KTHREAD 0x00200000

#include "record.h"

struct seq_file;

struct bpf_iter_meta {
	struct seq_file *seq;
	__u64 session_id; // one per opening of the iterator: one per pass
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

static void *(*bpf_map_lookup_elem)(void *map, const void *key) = (void *)1;
static long (*bpf_map_update_elem)(void *map, const void *key, const void *value, __u64 flags) = (void *)2;
static __u64 (*bpf_get_current_task)(void) = (void *)35;
static long (*bpf_probe_read_kernel)(void *dst, __u32 size, const void *unsafe_ptr) = (void *)113;
static long (*bpf_seq_write)(struct seq_file *m, const void *data, __u32 len) = (void *)127;

#include "describe.h"


// state is a thread group's entry, for its TGID in the initial PID namespace: in slots at the index
// tgid & SLOT_MASK, or, when another live group holds that slot, in groups. Slots of groups that ended are
// taken over by the next group that needs them; entries of groups that ended stay in groups until user
// space removes those not visited by the last pass (iter.go's collect).
struct state {
	__u64 last_cpu; // CPU time last reported
	__u64 start_ns; // the leader's start when last reported: a reused TGID is another process
	__u64 session;  // the pass that last visited the group
	__u64 dead;     // signal->sum_sched_runtime at the group's first visit in that pass
	__u64 live;     // runtime of the threads visited so far in that pass
	__u32 threads;  // threads visited so far in that pass; 0 once the group is written or skipped
	__u32 seen;     // last_cpu and start_ns hold a reported value
	struct group open_as; // the group as described at its first visit in that pass, for the end of the pass
	__u32 slot;           // its index in open_keys while open, or NO_SLOT or OVERFLOW
	__u32 tgid;           // the group's TGID: which group holds a slot of slots (0: none)
};

// Slots of open groups: NO_SLOT for a group not visible from the reader's namespace, OVERFLOW for one that
// found open_keys full (counted in unfinished).
#define MAX_OPEN 512
#define OVERFLOW MAX_OPEN
#define NO_SLOT 0xffffffff

// slots holds the state of most groups: an array, whose lookups the verifier inlines (no call, no hash,
// one place per group in one block of memory, which the walk, in the order of thread IDs, visits nearly in
// order); with a hash of every group, its lookups were a third of a pass (cache misses in elements
// allocated one by one).
#define NSLOTS (1 << 14)
#define SLOT_MASK (NSLOTS - 1)

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, NSLOTS);
	__type(key, __u32);
	__type(value, struct state);
} slots SEC(".maps");

// groups holds the state of the groups whose slot another live group holds.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 1 << 14);
	__type(key, __u32);
	__type(value, struct state);
} groups SEC(".maps");

// emit_all makes a pass report every thread group, moved or not; user space sets it between passes.
volatile __u32 emit_all;
// pass_session is the session of the latest pass, unfinished the groups it left open (see above).
// ended_session is the latest pass whose end (the call with no task) has come: the kernel goes on showing
// tasks born after the walk to a reader that reads on for its end of file (it stops calling the program
// at the end once that call's records are out, not on the tasks), and those count in the next pass.
volatile __u64 pass_session;
volatile __u64 prev_session; // the pass before pass_session: a slot visited in neither holds no live group
volatile __u64 ended_session;
volatile __u32 unfinished;
// open_keys lists the groups open in pass_session (the first nopen): once the pass has ended, user space
// reports them (iter.go's openGroups).
__u32 open_keys[MAX_OPEN];
volatile __u32 nopen;

// read_ptr reads a kernel pointer into a scalar, so that the arithmetic on it below is not arithmetic on a
// BTF pointer, which older verifiers refuse.
static __attribute__((always_inline)) void *read_ptr(void *const *field)
{
	void *p = 0;

	bpf_probe_read_kernel(&p, sizeof(p), field);
	return p;
}

// upid_at returns a task's PID as seen from the PID namespace at level (0 for the initial namespace), with
// that namespace; nr is 0 when the task is not in a namespace that deep.
static __attribute__((always_inline)) struct upid upid_at(struct task_struct *t, unsigned int level)
{
	struct upid u = {};
	struct pid *p = read_ptr((void *const *)&t->thread_pid);
	unsigned int deepest = 0;

	if (!p)
		return u;
	bpf_probe_read_kernel(&deepest, sizeof(deepest), &p->level);
	if (deepest < level || level > 32)
		return u;
	bpf_probe_read_kernel(&u, sizeof(u), &p->numbers[level]);
	return u;
}

// reader_level is the depth of the reading process's PID namespace, whose PIDs the pass reports (the
// iterator walks the tasks of that namespace, and its /proc numbers them so).
static __attribute__((always_inline)) unsigned int reader_level(void)
{
	struct task_struct *cur = (struct task_struct *)bpf_get_current_task();
	struct pid *p = read_ptr((void *const *)&cur->thread_pid);
	unsigned int level = 0;

	if (p)
		bpf_probe_read_kernel(&level, sizeof(level), &p->level);
	return level;
}

// identify fills in what a record's group says besides its CPU time and threads, from its leader; it
// returns 0 when the group is not visible from the reader's PID namespace.
static __attribute__((always_inline)) int identify(struct task_struct *leader, struct group *g)
{
	struct upid self, parent;
	unsigned int level = reader_level();

	self = upid_at(leader, level);
	if (!self.nr)
		return 0;
	parent = upid_at(leader->real_parent->group_leader, level); // the parent may be a thread
	g->tgid = self.nr;
	if (parent.ns == self.ns)
		g->ppid = parent.nr; // 0 when the parent is outside the namespace, as getppid(2) says
	g->start_ns = leader->start_boottime;
	if (leader->flags & PF_KTHREAD)
		g->flags |= GROUP_KERNEL;
	return 1;
}

// find returns the state of the group key, or 0 when it has none yet.
static __attribute__((always_inline)) struct state *find(__u32 key)
{
	__u32 idx = key & SLOT_MASK;
	struct state *st = bpf_map_lookup_elem(&slots, &idx);

	if (st && st->tgid == key)
		return st;
	return bpf_map_lookup_elem(&groups, &key);
}

// place gives a group that has no state yet its slot, when no group visited in this pass or the one before
// holds it (a group that ended), or else an entry of groups; it returns 0 when groups is full.
static __attribute__((always_inline)) struct state *place(__u32 key, __u64 session)
{
	__u32 idx = key & SLOT_MASK;
	struct state fresh = {}, *st = bpf_map_lookup_elem(&slots, &idx);

	if (st && (!st->tgid || (st->session != session && st->session != prev_session))) {
		__builtin_memset(st, 0, sizeof(*st));
		st->tgid = key;
		return st;
	}
	fresh.tgid = key;
	bpf_map_update_elem(&groups, &key, &fresh, BPF_NOEXIST);
	return bpf_map_lookup_elem(&groups, &key);
}

// take gives a group at its first visit in a pass a place in open_keys.
static __attribute__((always_inline)) void take(struct state *st, __u32 key)
{
	__u32 n = nopen;

	if (n >= MAX_OPEN) {
		st->slot = OVERFLOW;
		unfinished++;
		return;
	}
	open_keys[n] = key;
	nopen = n + 1;
	st->slot = n;
}

// release takes a group out of open_keys: the last listed moves to its place.
static __attribute__((always_inline)) void release(struct state *st)
{
	__u32 i = st->slot, last = nopen - 1, moved;
	struct state *other;

	if (i == OVERFLOW)
		unfinished--;
	if (i >= MAX_OPEN || last >= MAX_OPEN)
		return;
	moved = open_keys[last];
	open_keys[i] = moved;
	nopen = last;
	if (i != last) {
		other = find(moved);
		if (other)
			other->slot = i;
	}
}

// done marks the group written or skipped for this pass.
static __attribute__((always_inline)) void done(struct state *st, __u64 session, int opened_before)
{
	st->session = session;
	st->threads = 0;
	if (opened_before)
		release(st);
}

SEC("iter/task")
int thread_groups_58(struct bpf_iter__task *ctx)
{
	struct seq_file *seq = ctx->meta->seq;
	__u64 session = ctx->meta->session_id;
	struct task_struct *task = ctx->task;
	struct task_struct *leader;
	struct signal_struct *sig;
	struct state *st;
	struct group g = {};
	struct record r = {};
	__u32 key, threads;
	int nr_threads;
	__u64 live, dead;
	int open;

	if (session != pass_session) {
		prev_session = pass_session;
		pass_session = session;
		unfinished = 0;
		nopen = 0;
	}
	if (!task) {
		// The call at the end of the pass. The groups still open are written by user space from open_keys
		// (iter.go's openGroups): a loop over them here cost the verifier some 50,000 instructions.
		ended_session = session;
		return 0;
	}
	if (session == ended_session)
		return 0; // a task born after the walk, shown after its end: it counts in the next pass
	key = task->tgid;
	st = find(key);
	if (!st)
		st = place(key, session);
	if (!st) {
		unfinished++; // groups is full: this pass cannot tell whether the group moved
		return 0;
	}
	// Exited threads first, kept from the group's first visit: a thread that exits later in the pass moves
	// its runtime there after its visit (counted once, live) or before it (missed): both are flagged. Read
	// before the branch, and held there by an empty asm that makes the value live in a register, so that
	// the compiler does not sink it into a load shared with the map's (one instruction on two kinds of
	// pointer, which the verifier refuses).
	sig = task->signal;
	dead = sig->sum_sched_runtime;
	asm volatile("" : "+r"(dead));
	nr_threads = sig->nr_threads;
	live = 0;
	threads = 0;
	// A thread of a group already written or skipped in this pass was born behind the walk after the
	// group's last thread: the group is reported once a pass, and the new thread's time counts in the next.
	open = st->session == session;
	if (open && !st->threads)
		return 0;
	if (open) {
		dead = st->dead;
		live = st->live;
		threads = st->threads;
	}
	live += task->se.sum_exec_runtime;
	threads++;
	if (threads < nr_threads) {
		if (!open) {
			__builtin_memset(&g, 0, sizeof(g));
			if (identify(task->group_leader, &g))
				take(st, key);
			else
				st->slot = NO_SLOT;
			st->open_as = g;
		}
		st->session = session;
		st->dead = dead;
		st->live = live;
		st->threads = threads;
		return 0;
	}

	// The group's last thread in this pass.
	leader = task->group_leader;
	g.cpu_ns = live + dead;
	g.threads = threads;
	if (sig->sum_sched_runtime != dead)
		g.flags |= GROUP_INEXACT;
	if (st->seen && st->start_ns == leader->start_boottime && st->last_cpu == g.cpu_ns && !emit_all) {
		done(st, session, open);
		return 0;
	}
	if (!identify(leader, &g)) {
		done(st, session, open);
		return 0;
	}
	r.g = g;
	describe(leader, &r);
	// A full buffer refuses the record; the kernel then shows this thread again at the next read, so
	// nothing is changed until the record is out.
	if (bpf_seq_write(seq, &r, sizeof(r)))
		return 0;
	if (!(g.flags & GROUP_INEXACT)) {
		st->last_cpu = g.cpu_ns;
		st->start_ns = g.start_ns;
		st->seen = 1;
	}
	done(st, session, open);
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
