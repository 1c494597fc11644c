// Package taskiter reads the CPU time of every thread group on the machine in one pass of a BPF task
// iterator, and reports only the thread groups whose CPU time moved since the previous pass. The sampler
// (internal/sample) uses it as an activity filter: a process the iterator reports as unchanged did not run,
// so its counters need no reading in that sample. Its cost follows the number of tasks (a few hundred
// nanoseconds each, in the kernel) instead of one or more system calls per process.
//
// It needs Linux 6.7 or later (open-coded task iterators), kernel BTF (/sys/kernel/btf/vmlinux, for CO-RE)
// and CAP_BPF with CAP_PERFMON, or CAP_SYS_ADMIN; without them Open returns an error matching
// ErrNotSupported and callers fall back to reading every process.
//
// It imports cilium/ebpf and, of tare's, kernel (whether this process may load BPF); the sampler is its only caller. A new field of a thread
// group goes in taskiter.bpf.c's record and group.go's parse, with recordSize.
//
// The BPF program is taskiter.bpf.c. Its compiled objects (taskiter_bpfel.o, taskiter_bpfeb.o) and Go
// bindings (taskiter_bpfel.go, taskiter_bpfeb.go) are committed, so building tare needs no C compiler. After
// changing the C source, regenerate them with clang and llvm-strip installed (Debian: apt-get install clang
// llvm) by running, in this directory:
//
//	go generate
//
// which runs bpf2go at the cilium/ebpf version of go.mod. The C source includes no headers: the kernel
// structures it reads are declared in it with CO-RE relocations, so no vmlinux.h is needed.
package taskiter

//go:generate go run github.com/cilium/ebpf/cmd/bpf2go@v0.22.0 -cc clang -cflags "-O2 -g -Wall -Werror" -no-global-types taskiter taskiter.bpf.c
