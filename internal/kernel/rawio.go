package kernel

import (
	"bytes"
	"errors"
	"os"
	"sync"

	"unsafe"

	"golang.org/x/sys/unix"
)

// rawPread reads a /proc pseudo-file at offset 0 without telling the Go scheduler about the system call.
// These reads never block, and announcing each one (entersyscall) lets the scheduler's monitor hand the
// processor to another thread whenever one takes more than 20 µs: with hundreds of reads per sample that
// costs more futex and nanosleep calls than reads. Use only for files that cannot block: a raw system call
// that blocks keeps its Go processor, and a garbage collection then waits for it. Files whose read waits for
// the target process (cmdline, smaps_rollup, environ, maps) go through blockingread.go instead.
func rawPread(fd int, buf []byte) (int, error) {
	if len(buf) == 0 {
		return 0, nil
	}
	n, _, e := unix.RawSyscall6(unix.SYS_PREAD64, uintptr(fd), uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)), 0, 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

// rawOpen opens a file without telling the scheduler, like rawPread, and with the same restriction.
func rawOpen(path string, flags int) (int, error) {
	p, err := unix.BytePtrFromString(path)
	if err != nil {
		return -1, err
	}
	dirfd := unix.AT_FDCWD
	fd, _, e := unix.RawSyscall6(unix.SYS_OPENAT, uintptr(dirfd), uintptr(unsafe.Pointer(p)), uintptr(flags|unix.O_CLOEXEC), 0, 0, 0)
	if e != 0 {
		return -1, e
	}
	return int(fd), nil
}

// rawRead reads a file opened by rawOpen; only for files that cannot block (see rawPread).
func rawRead(fd int, buf []byte) (int, error) {
	if len(buf) == 0 {
		return 0, nil
	}
	n, _, e := unix.RawSyscall(unix.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)))
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

func rawClose(fd int) {
	_, _, _ = unix.RawSyscall(unix.SYS_CLOSE, uintptr(fd), 0, 0)
}

func rawGetdents(fd int, buf []byte) (int, error) {
	n, _, e := unix.RawSyscall(unix.SYS_GETDENTS64, uintptr(fd), uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)))
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

func rawSendto(fd int, b []byte, to *unix.RawSockaddrNetlink) error {
	_, _, e := unix.RawSyscall6(unix.SYS_SENDTO, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), 0,
		uintptr(unsafe.Pointer(to)), unsafe.Sizeof(*to))
	if e != 0 {
		return e
	}
	return nil
}

func rawRecv(fd int, b []byte, flags int) (int, error) {
	n, _, e := unix.RawSyscall6(unix.SYS_RECVFROM, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), uintptr(flags), 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

// ReadBounded reads a pseudo-file whose stat size cannot be trusted, up to 1 MiB. It uses raw system
// calls: os.Open would also register every /proc file with the network poller (two fcntl and an epoll_ctl
// per file), and see rawPread for why the scheduler is not told. Only for files that cannot block.
func ReadBounded(path string) ([]byte, error) {
	return readRaw(path, false)
}

// readRecord is ReadBounded for a file the kernel shows as one record (single_open: /proc/PID/stat,
// statm, io, cgroup): such a file's read fills the buffer or returns all there is, so a short read is its
// end and the read that would return 0 is not made.
func readRecord(path string) ([]byte, error) {
	return readRaw(path, true)
}

func readRaw(path string, oneRecord bool) ([]byte, error) {
	fd, err := rawOpen(path, unix.O_RDONLY)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer rawClose(fd)
	return readFull(fd, rawRead, 1<<20, path, oneRecord)
}

// readBufs are readFull's buffers, reused: a reading is copied out at its size, so that the thousands of
// small files a sample reads do not each allocate (and zero) a page that the garbage collector then sweeps.
var readBufs = sync.Pool{New: func() any { b := make([]byte, 4096); return &b }}

// maxPooledRead is the largest buffer readFull puts back in readBufs.
const maxPooledRead = 64 << 10

// readFull reads fd to its end (or limit bytes) with read, growing the buffer to fit: the one loop behind
// ReadBounded (raw system calls) and readBlocking (ordinary ones, for files that can block). With oneRecord
// (files that the kernel returns in one read when the buffer is large enough: see readRecord), a short
// read ends it.
func readFull(fd int, read func(int, []byte) (int, error), limit int, path string, oneRecord bool) ([]byte, error) {
	bp := readBufs.Get().(*[]byte)
	defer func() {
		if cap(*bp) <= maxPooledRead {
			readBufs.Put(bp)
		}
	}()
	buf := (*bp)[:0]
	for len(buf) < limit {
		space := cap(buf) - len(buf)
		n, err := read(fd, buf[len(buf):cap(buf)])
		if err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return nil, &os.PathError{Op: "read", Path: path, Err: err}
		}
		if n == 0 {
			break
		}
		buf = buf[:len(buf)+n]
		if oneRecord && n < space {
			break
		}
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
			*bp = buf[:cap(buf)]
		}
	}
	return bytes.Clone(buf), nil
}

// ReadDirNames lists a directory with raw system calls (see ReadBounded for why not os.Open).
func ReadDirNames(path string) ([]string, error) {
	fd, err := rawOpen(path, unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer rawClose(fd)
	buf := make([]byte, 32<<10)
	var names []string
	for {
		n, err := rawGetdents(fd, buf)
		if err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return nil, &os.PathError{Op: "getdents", Path: path, Err: err}
		}
		if n <= 0 {
			return names, nil
		}
		_, _, names = unix.ParseDirent(buf[:n], -1, names)
	}
}
