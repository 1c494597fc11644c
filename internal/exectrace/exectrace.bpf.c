//go:build ignore

// SPDX-License-Identifier: (MIT OR GPL-2.0-only)
//
// Process starts: two BPF programs on the scheduler's BTF tracepoints write a record for every new process
// (sched_process_fork of a thread-group leader) and every exec (sched_process_exec), with its parent and its
// command line copied from its own memory, into a ring buffer that user space drains when it
// samples. Nothing wakes user space per event (BPF_RB_NO_WAKEUP). Generated into Go by bpf2go (see doc.go);
// needs kernel BTF for CO-RE and tp_btf, and Linux 5.8 (ring buffer, boot-time clock).
//
// No headers: the few kernel types are declared here with preserve_access_index, so that CO-RE relocations
// fit them to the running kernel's layout, and the few helpers by number.

typedef unsigned int __u32;
typedef unsigned long long __u64;

#define SEC(name) __attribute__((section(name), used))
#define __uint(name, val) int(*name)[val]
#define CORE __attribute__((preserve_access_index))
#define INLINE static __attribute__((always_inline))

// From include/uapi/linux/bpf.h.
#define BPF_MAP_TYPE_RINGBUF 27
#define BPF_RB_NO_WAKEUP 1

// Kinds of an event (exectrace.go's kind).
#define KIND_FORK 1
#define KIND_EXEC 2

#define ARGS 1024 // bytes of the command line copied; longer ones are cut (args_full says by how much)

struct mm_struct {
	unsigned long arg_start;
	unsigned long arg_end;
} CORE;

struct task_struct {
	int pid;
	int tgid;
	struct task_struct *real_parent;
	struct mm_struct *mm;
} CORE;

static long (*bpf_probe_read_user)(void *dst, __u32 size, const void *src) = (void *)112;
static __u64 (*bpf_ktime_get_boot_ns)(void) = (void *)125;
static void *(*bpf_ringbuf_reserve)(void *ringbuf, __u64 size, __u64 flags) = (void *)131;
static void (*bpf_ringbuf_submit)(void *data, __u64 flags) = (void *)132;

// event is one record of the ring buffer.
struct event {
	__u64 boot_ns;   // CLOCK_BOOTTIME of the fork or exec
	__u32 kind;      // KIND_FORK or KIND_EXEC
	__u32 tgid;      // the new process, or the process that exec'd
	__u32 ppid;      // its parent's thread-group ID
	__u32 args_len;  // bytes of args copied: NUL-separated arguments, as in /proc/PID/cmdline
	__u64 args_full; // bytes of the whole argument area; more than args_len when it was cut
	char args[ARGS];
};

// User space sets max_entries at load (a power of two multiple of the page size).
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 21);
} events SEC(".maps");

// Names struct event in the object's BTF, for bpf2go's Go type.
const struct event *unused_event __attribute__((unused));

// Records lost to a full ring buffer (user space fell behind); user space reads it.
__u64 dropped;

// emit records task t (whose parent is read from it) with the command line of the current task's memory:
// at a fork the current task is the parent, whose arguments the child shares until it execs; at an exec it
// is the new program.
INLINE void emit(__u32 kind, struct task_struct *t, struct mm_struct *mm)
{
	struct event *e = bpf_ringbuf_reserve(&events, sizeof(struct event), 0);
	__u64 len = 0;

	if (!e) {
		__sync_fetch_and_add(&dropped, 1);
		return;
	}
	e->boot_ns = bpf_ktime_get_boot_ns();
	e->kind = kind;
	e->tgid = t->tgid;
	e->ppid = t->real_parent->tgid;
	e->args_len = 0;
	e->args_full = 0;
	if (mm) {
		unsigned long start = mm->arg_start;
		len = mm->arg_end - start;
		e->args_full = len;
		if (len > ARGS)
			len = ARGS;
		if (len && bpf_probe_read_user(e->args, len, (const void *)start) == 0)
			e->args_len = len;
	}
	bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
}

// sched_process_fork(parent, child) fires in the parent once the child exists. A thread (pid != tgid) is
// not a new process.
SEC("tp_btf/sched_process_fork")
int process_fork(__u64 *ctx)
{
	struct task_struct *parent = (struct task_struct *)ctx[0];
	struct task_struct *child = (struct task_struct *)ctx[1];

	if (child->pid != child->tgid)
		return 0;
	emit(KIND_FORK, child, parent->mm);
	return 0;
}

// sched_process_exec(p, old_pid, bprm) fires in p once the new program is loaded, its arguments in place.
SEC("tp_btf/sched_process_exec")
int process_exec(__u64 *ctx)
{
	struct task_struct *p = (struct task_struct *)ctx[0];

	emit(KIND_EXEC, p, p->mm);
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
