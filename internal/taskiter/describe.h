// SPDX-License-Identifier: (MIT OR GPL-2.0-only)
//
// describe.h: describe(), which fills a record's description (record.h). Included by taskiter.bpf.c and
// bpfiter.bpf.c after their declarations of struct task_struct and struct signal_struct, which must have
// the fields read here.

// describe fills r's description from the group's leader. The I/O counters of a group of one thread are
// its leader's plus those its exited threads left in signal (do_io_accounting adds the same); a group of
// more threads gets none, and user space reads its /proc/PID/io: adding up every thread's counters would
// cost every pass, for the few groups a pass describes. One thread is signal's count, not the walk's: a
// branch on the walk's count would make the verifier tell every count apart at the head of the
// open-coded loop, and walk it to its limit.
static __attribute__((always_inline)) void describe(struct task_struct *leader, struct record *r)
{
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
	r->g.flags |= GROUP_DESCRIBED;
	if (sig->nr_threads == 1 && __builtin_preserve_field_info(leader->ioac.read_bytes, 2 /* BPF_FIELD_EXISTS */)) {
		d->read_bytes = leader->ioac.read_bytes + sig->ioac.read_bytes;
		d->write_bytes = leader->ioac.write_bytes + sig->ioac.write_bytes;
		r->g.flags |= GROUP_IO;
	}
}
