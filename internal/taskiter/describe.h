// SPDX-License-Identifier: (MIT OR GPL-2.0-only)
//
// describe.h: describe(), which fills a record's description (record.h). Included by taskiter.bpf.c and
// bpfiter.bpf.c after their declarations of struct task_struct and struct signal_struct, which must have
// the fields read here.

// cgroup_of is the ID of the cgroup of a controller's state in set (subsys[id]), 0 when the kernel has no
// such controller (its enum value does not exist) or the array has no such slot.
#define cgroup_of(set, ctl)                                                                                          \
	(__builtin_preserve_enum_value(*(enum cgroup_subsys_id *)ctl, 0 /* BPF_ENUMVAL_EXISTS */) &&                \
			 __builtin_preserve_enum_value(*(enum cgroup_subsys_id *)ctl, 1 /* BPF_ENUMVAL_VALUE */) <        \
				 __builtin_preserve_field_info((set)->subsys, 1 /* BPF_FIELD_BYTE_SIZE */) / 8        \
		 ? (set)->subsys[__builtin_preserve_enum_value(*(enum cgroup_subsys_id *)ctl, 1)]->cgroup->kn->id \
		 : 0)

// describe fills r's description from the group's leader. The I/O counters of a group of one thread are
// its leader's plus those its exited threads left in signal (do_io_accounting adds the same); a group of
// more threads gets none, and user space reads its /proc/PID/io: adding up every thread's counters would
// cost every pass, for the few groups a pass describes. One thread is signal's count, not the walk's: a
// branch on the walk's count would make the verifier tell every count apart at the head of the
// open-coded loop, and walk it to its limit.
static __attribute__((always_inline)) void describe(struct task_struct *leader, struct record *r)
{
	struct css_set *cgroups = leader->cgroups;
	struct signal_struct *sig = leader->signal;
	struct desc *d = &r->d;

	bpf_probe_read_kernel(d->comm, sizeof(d->comm), leader->comm);
	if (__builtin_preserve_field_info(leader->__state, 2 /* BPF_FIELD_EXISTS */))
		d->state = leader->__state;
	else
		d->state = ((struct task_struct___pre514 *)leader)->state;
	d->exit_state = leader->exit_state;
	d->euid = leader->real_cred->euid.val;
	d->cutime_ns = sig->cutime;
	d->cstime_ns = sig->cstime;
	d->cgroup_ids[0] = cgroups->dfl_cgrp->kn->id;
	d->cgroup_ids[1] = cgroup_of(cgroups, cpu_cgrp_id);
	d->cgroup_ids[2] = cgroup_of(cgroups, memory_cgrp_id);
	r->g.flags |= GROUP_DESCRIBED;
	if (sig->nr_threads == 1 && __builtin_preserve_field_info(leader->ioac.read_bytes, 2 /* BPF_FIELD_EXISTS */)) {
		d->read_bytes = leader->ioac.read_bytes + sig->ioac.read_bytes;
		d->write_bytes = leader->ioac.write_bytes + sig->ioac.write_bytes;
		r->g.flags |= GROUP_IO;
	}
}
