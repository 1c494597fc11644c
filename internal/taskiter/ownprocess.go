package taskiter

import (
	"errors"
	"fmt"
	"os"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// attachToSelf attaches the open-coded pass's iterator to tare's own process (a TGID filter, Linux 6.1),
// so that a read calls the program for tare's threads alone; the program walks the process list from the
// call at tare's leader. cilium/ebpf's AttachIter takes no task filter, so the link is made with
// BPF_LINK_CREATE here and handed to cilium/ebpf by its file descriptor.
func attachToSelf(prog *ebpf.Program) (*link.Iter, error) {
	// union bpf_iter_link_info's task member: tid, pid, pid_fd.
	info := struct{ tid, pid, pidFD uint32 }{pid: uint32(os.Getpid())}
	// union bpf_attr's link_create: prog_fd, target_fd, attach_type, flags, iter_info, iter_info_len.
	attr := struct {
		progFD, targetFD, attachType, flags uint32
		iterInfo                            uint64
		iterInfoLen                         uint32
		_                                   uint32
	}{progFD: uint32(prog.FD()), attachType: uint32(ebpf.AttachTraceIter),
		iterInfo: uint64(uintptr(unsafe.Pointer(&info))), iterInfoLen: uint32(unsafe.Sizeof(info))}
	fd, _, errno := unix.Syscall(unix.SYS_BPF, unix.BPF_LINK_CREATE, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr))
	if errno != 0 {
		return nil, fmt.Errorf("attaching the task iterator to tare's process: %w", errno)
	}
	l, err := link.NewFromFD(int(fd))
	if err != nil {
		_ = unix.Close(int(fd))
		return nil, fmt.Errorf("attaching the task iterator to tare's process: %w", err)
	}
	it, ok := l.(*link.Iter)
	if !ok {
		_ = l.Close()
		return nil, errors.New("attaching the task iterator to tare's process: the kernel made another kind of link")
	}
	return it, nil
}
