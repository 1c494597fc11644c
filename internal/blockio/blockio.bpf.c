//go:build ignore

// SPDX-License-Identifier: (MIT OR GPL-2.0-only)
//
// Block I/O by process: four BPF programs on the block layer's BTF tracepoints follow every request from
// its creation to its completion and add, in the kernel, its count, bytes and latencies to a per-process
// record. Nothing is sent per event. Generated into Go by bpf2go (see doc.go); needs kernel BTF for CO-RE
// and tp_btf (Linux 5.5), and block_io_start (Linux 6.5) for charging requests to their submitter.
//
// No headers: the few kernel types are declared here with preserve_access_index, so that CO-RE relocations
// fit them to the running kernel's layout, and the few helpers by number.

typedef unsigned int __u32;
typedef unsigned long long __u64;

#define SEC(name) __attribute__((section(name), used))
#define __uint(name, val) int(*name)[val]
#define __type(name, val) typeof(val) *name
#define CORE __attribute__((preserve_access_index))
#define INLINE static __attribute__((always_inline))

// From include/uapi/linux/bpf.h and include/linux/blk_types.h.
#define BPF_MAP_TYPE_HASH 1
#define BPF_MAP_TYPE_LRU_HASH 9
#define BPF_F_NO_PREALLOC 1
#define BPF_NOEXIST 1
#define REQ_OP_MASK 0xff
#define REQ_OP_READ 0
#define REQ_OP_WRITE 1

// Directions of a record (blockio.go's Dir).
#define DIR_READ 0
#define DIR_WRITE 1
#define DIR_OTHER 2 // flush, discard, write zeroes, zone and driver commands

#define SLOTS 32 // log2 histogram slots: slot 0 is [0, 1) µs, slot i is [2^(i-1), 2^i) µs, the last is open

struct gendisk {
	int major;
	int first_minor;
} CORE;

struct request_queue {
	struct gendisk *disk;
} CORE;

struct request {
	struct request_queue *q;
	unsigned int cmd_flags;
	unsigned int __data_len;
} CORE;

static void *(*bpf_map_lookup_elem)(void *map, const void *key) = (void *)1;
static long (*bpf_map_update_elem)(void *map, const void *key, const void *value, __u64 flags) = (void *)2;
static long (*bpf_map_delete_elem)(void *map, const void *key) = (void *)3;
static __u64 (*bpf_ktime_get_ns)(void) = (void *)5;
static __u64 (*bpf_get_current_pid_tgid)(void) = (void *)14;
static long (*bpf_get_current_comm)(void *buf, __u32 size) = (void *)16;
static __u64 (*bpf_get_current_cgroup_id)(void) = (void *)80;

// start is what is known of a request in flight: who created it, and when it was created and issued.
struct start {
	__u64 start_ns; // block_io_start, or block_rq_insert or block_rq_issue for a request that skipped it
	__u64 issue_ns; // the last block_rq_issue; 0 before it
	__u64 cgroup;   // cgroup v2 id of the creating task
	__u32 tgid;     // thread group of the creating task, in the initial PID namespace
	__u32 pad;
	char comm[16];
};

// key names one record: one process, in one cgroup, doing I/O in one direction on one disk.
struct key {
	__u32 tgid;
	__u32 dir;
	__u32 major;
	__u32 minor;
	__u64 cgroup;
};

// stat is the record: cumulative since load; user space reads it, never writes it.
struct stat {
	__u64 requests;
	__u64 bytes;
	__u64 device_us[SLOTS]; // issue to completion
	__u64 queue_us[SLOTS];  // creation to issue
	char comm[16];          // the process's name when its first request was created
};

// Requests in flight, keyed by the struct request's address. LRU: an entry whose completion was never seen
// (loaded while the request was in flight, a request the driver dropped) ages out instead of filling it.
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, struct start);
} starts SEC(".maps");

// The records. Not LRU: a full map refuses a new process and counts it in dropped, so no count is lost
// without saying so. User space sets max_entries at load.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 4096);
	__type(key, struct key);
	__type(value, struct stat);
} stats SEC(".maps");

// Counters of what could not be charged; user space reads them.
__u64 unmatched; // completions of requests whose creation or issue was not seen
__u64 dropped;   // completions not counted because stats was full
// settled counts completions whose accounting is finished (bumped last, on every path): a reader that
// finds it unchanged since its previous read knows that no record, unmatched or dropped moved since then.
__u64 settled;

// zero is an empty record to create records from: it is too large for the 512-byte BPF stack.
struct stat zero;

INLINE __u32 log2_32(__u32 v)
{
	__u32 r, shift;

	r = (v > 0xFFFF) << 4;
	v >>= r;
	shift = (v > 0xFF) << 3;
	v >>= shift;
	r |= shift;
	shift = (v > 0xF) << 2;
	v >>= shift;
	r |= shift;
	shift = (v > 0x3) << 1;
	v >>= shift;
	r |= shift;
	r |= (v >> 1);
	return r;
}

// slot is the histogram slot of a duration in nanoseconds, counted in whole microseconds.
INLINE __u32 slot(__u64 ns)
{
	__u64 us = ns / 1000;
	__u32 s;

	if (!us)
		return 0;
	s = (us >> 32) ? log2_32(us >> 32) + 33 : log2_32(us) + 1;
	if (s >= SLOTS)
		s = SLOTS - 1;
	return s;
}

// remember records the current task as the creator of rq, now.
INLINE void remember(__u64 id)
{
	struct start s = {};

	s.start_ns = bpf_ktime_get_ns();
	s.tgid = bpf_get_current_pid_tgid() >> 32;
	s.cgroup = bpf_get_current_cgroup_id();
	bpf_get_current_comm(s.comm, sizeof(s.comm));
	bpf_map_update_elem(&starts, &id, &s, 0);
}

// block_io_start fires where a bio becomes a new request (blk_account_io_start), in the task that submitted
// the bio: the process charged with the request.
SEC("tp_btf/block_io_start")
int io_start(__u64 *ctx)
{
	remember(ctx[0]);
	return 0;
}

// block_rq_insert fires when a request enters the I/O scheduler; it names the creator only of requests that
// block_io_start did not see (flushes, passthrough commands, requests in flight at load).
SEC("tp_btf/block_rq_insert")
int rq_insert(__u64 *ctx)
{
	__u64 id = ctx[0];

	if (!bpf_map_lookup_elem(&starts, &id))
		remember(id);
	return 0;
}

SEC("tp_btf/block_rq_issue")
int rq_issue(__u64 *ctx)
{
	__u64 id = ctx[0];
	struct start *s = bpf_map_lookup_elem(&starts, &id);

	if (!s) {
		remember(id);
		s = bpf_map_lookup_elem(&starts, &id);
		if (!s)
			return 0;
	}
	s->issue_ns = bpf_ktime_get_ns(); // a requeued request counts from its last issue
	return 0;
}

// block_rq_complete fires once per completion of a part of the request (nr_bytes of it): only the last
// one, covering what is left of __data_len, ends the request.
SEC("tp_btf/block_rq_complete")
int rq_complete(__u64 *ctx)
{
	struct request *rq = (struct request *)ctx[0];
	__u32 nr_bytes = (__u32)ctx[2];
	__u64 id = ctx[0];
	__u64 now = bpf_ktime_get_ns();
	struct key k = {};
	struct stat *st;
	struct start *s;
	struct gendisk *disk;
	__u32 op, last;

	s = bpf_map_lookup_elem(&starts, &id);
	if (!s || !s->issue_ns) {
		__sync_fetch_and_add(&unmatched, 1);
		__sync_fetch_and_add(&settled, 1);
		return 0;
	}
	op = rq->cmd_flags & REQ_OP_MASK;
	k.dir = op == REQ_OP_READ ? DIR_READ : op == REQ_OP_WRITE ? DIR_WRITE : DIR_OTHER;
	k.tgid = s->tgid;
	k.cgroup = s->cgroup;
	disk = rq->q->disk;
	if (disk) {
		k.major = disk->major;
		k.minor = disk->first_minor;
	}
	last = nr_bytes >= rq->__data_len;

	st = bpf_map_lookup_elem(&stats, &k);
	if (!st) {
		bpf_map_update_elem(&stats, &k, &zero, BPF_NOEXIST);
		st = bpf_map_lookup_elem(&stats, &k);
		if (!st) {
			__sync_fetch_and_add(&dropped, 1);
			if (last)
				bpf_map_delete_elem(&starts, &id);
			__sync_fetch_and_add(&settled, 1);
			return 0;
		}
		__builtin_memcpy(st->comm, s->comm, sizeof(st->comm));
	}
	__sync_fetch_and_add(&st->bytes, nr_bytes);
	if (!last) {
		__sync_fetch_and_add(&settled, 1);
		return 0;
	}
	__sync_fetch_and_add(&st->requests, 1);
	__sync_fetch_and_add(&st->device_us[slot(now - s->issue_ns) & (SLOTS - 1)], 1);
	__sync_fetch_and_add(&st->queue_us[slot(s->issue_ns - s->start_ns) & (SLOTS - 1)], 1);
	bpf_map_delete_elem(&starts, &id);
	__sync_fetch_and_add(&settled, 1);
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
