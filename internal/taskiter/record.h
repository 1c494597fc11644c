// SPDX-License-Identifier: (MIT OR GPL-2.0-only)
//
// record.h: the record both task passes write for a thread group (struct record: its struct group, then
// the description of its leader), and the kernel types the description reads. Included by taskiter.bpf.c
// and bpfiter.bpf.c before their own declarations of struct task_struct and struct signal_struct;
// group.go parses the record. The description says what /proc/PID/stat, the owner of /proc/PID and
// /proc/PID/io say of a process, so that tare does not read them for each process it first sees (a
// baseline of 3,000 idle processes opened 6,000 of those files and stat'ed 3,000 directories), and the IDs
// of its cgroups, so that it reads /proc/PID/cgroup once for the processes of one cgroup.

// Bits of group.flags (group.go decodes them).
#define GROUP_KERNEL 1    // a kernel thread
#define GROUP_INEXACT 2   // a thread exited during the walk: cpu_ns may miss it, the next read reports again
#define GROUP_DESCRIBED 4 // desc holds the leader's description
#define GROUP_IO 8        // desc's read_bytes and write_bytes are the group's: one live thread, and I/O accounting built in

// group is what a pass says of a thread group, in the machine's byte order.
struct group {
	__u32 tgid;
	__u32 ppid;
	__u64 cpu_ns;   // live threads' sum_exec_runtime plus the exited threads' (signal->sum_sched_runtime)
	__u64 start_ns; // start_boottime: ns since boot, suspend included
	__u32 threads;
	__u32 flags;
};

// desc is the description of the group's leader that follows its struct group in a record.
struct desc {
	char comm[16];
	__u32 state;      // the leader's task state (__state; state before Linux 5.14), as /proc reads it
	__u32 exit_state; // the leader's exit state (EXIT_ZOMBIE, EXIT_DEAD)
	__u32 euid;       // the effective UID of its credentials: the owner /proc/PID shows
	__u32 pad;
	__u64 cutime_ns;  // signal->cutime and cstime: the CPU time of the children it reaped
	__u64 cstime_ns;
	__u64 read_bytes; // what /proc/PID/io says (GROUP_IO): the thread's, and what exited threads left
	__u64 write_bytes;
	// The IDs (kernfs node IDs, never reused while the machine runs) of the leader's cgroups: on the unified
	// (v2) hierarchy, and of its cpu and memory controllers (v1 or v2; 0 for a controller the kernel lacks).
	// User space reads /proc/PID/cgroup once for the processes of one set of IDs (kernel.CgroupPaths,
	// which checks the file it remembers against them).
	__u64 cgroup_ids[3];
};

struct record {
	struct group g;
	struct desc d;
};

typedef struct {
	__u32 val;
} kuid_t;

struct cred {
	kuid_t euid;
} CORE;

// Under CONFIG_TASK_IO_ACCOUNTING; the struct is empty without it.
struct task_io_accounting {
	__u64 read_bytes;
	__u64 write_bytes;
} CORE;

// A cgroup and what leads to it from a task (task->cgroups): the css_set's cgroup on the unified
// hierarchy, and each controller's state (subsys[], indexed by enum cgroup_subsys_id, whose values depend
// on the kernel's configuration: CO-RE relocates them).
struct kernfs_node {
	__u64 id;
} CORE;

struct cgroup {
	struct kernfs_node *kn;
} CORE;

struct cgroup_subsys_state {
	struct cgroup *cgroup;
} CORE;

struct css_set {
	struct cgroup_subsys_state *subsys[16];
	struct cgroup *dfl_cgrp;
} CORE;

enum cgroup_subsys_id {
	cpu_cgrp_id = 1,
	memory_cgrp_id = 4,
};

// The field before Linux 5.14 renamed it __state (a long then, an unsigned int since).
struct task_struct___pre514 {
	long state;
} CORE;

