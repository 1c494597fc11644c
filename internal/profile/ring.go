package profile

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/tare-dev/tare/internal/kernel"
)

// ErrMalformed wraps every error of a parser in this package: the input is not what the kernel writes. It
// is kernel.ErrMalformed.
var ErrMalformed = kernel.ErrMalformed

// RawSample is one PERF_RECORD_SAMPLE as the kernel wrote it.
type RawSample struct {
	PID, TID uint32
	Time     uint64 // ns, CLOCK_MONOTONIC-like perf clock
	CPU      uint32
	Period   uint64 // ns for cpu-clock, cycles for cycles
	// Chain is the call chain, leaf first, with the kernel's context markers (PERF_CONTEXT_KERNEL,
	// PERF_CONTEXT_USER) before the frames of each.
	Chain []uint64
}

// ring is one CPU's mmap ring buffer: a metadata page, then a power-of-two data area.
type ring struct {
	fd   int
	mem  []byte
	data []byte
	buf  []byte // one record, unwrapped
}

// ringPages is the data area in pages: 64 KiB holds about 150 samples of 50 frames, 1.5 s at 99 Hz, far more
// than a drain period.
const ringPages = 16

func newRing(fd int) (*ring, error) {
	size := (1 + ringPages) * unix.Getpagesize()
	mem, err := unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mapping the perf ring buffer: %w: raise kernel.perf_event_mlock_kb or ulimit -l", err)
	}
	return &ring{fd: fd, mem: mem, data: mem[unix.Getpagesize():]}, nil
}

func (r *ring) close() {
	_ = unix.IoctlSetInt(r.fd, unix.PERF_EVENT_IOC_DISABLE, 0)
	_ = unix.Munmap(r.mem)
	_ = unix.Close(r.fd)
}

// head and tail are perf_event_mmap_page's data_head and data_tail (offsets 1024 and 1032).
func (r *ring) head() *uint64 { return (*uint64)(unsafe.Pointer(&r.mem[1024])) }
func (r *ring) tail() *uint64 { return (*uint64)(unsafe.Pointer(&r.mem[1032])) }

// drain hands every complete record in the ring to fn and frees the space. The record slice is valid only
// during the call.
func (r *ring) drain(fn func(rec []byte)) {
	head := atomic.LoadUint64(r.head()) // acquire: records before head are written
	tail := atomic.LoadUint64(r.tail())
	n := uint64(len(r.data))
	for tail+8 <= head {
		var hdr [8]byte
		r.copy(hdr[:], tail%n)
		size := uint64(binary.LittleEndian.Uint16(hdr[6:]))
		if size < 8 || tail+size > head {
			break
		}
		if cap(r.buf) < int(size) {
			r.buf = make([]byte, size)
		}
		rec := r.buf[:size]
		r.copy(rec, tail%n)
		fn(rec)
		tail += size
	}
	atomic.StoreUint64(r.tail(), tail) // release: the kernel may overwrite
}

// copy copies len(dst) bytes from the data area at off, wrapping at its end.
func (r *ring) copy(dst []byte, off uint64) {
	k := copy(dst, r.data[off:])
	copy(dst[k:], r.data)
}

// Record types parseRecord tells apart.
const (
	recSample = unix.PERF_RECORD_SAMPLE
	recLost   = unix.PERF_RECORD_LOST
)

// parseRecord decodes one record written with sampleType: a sample, or the number of samples the kernel
// lost because the ring was full. Other record types give kind and no error.
func parseRecord(rec []byte) (kind uint32, s RawSample, lost uint64, err error) {
	le := binary.LittleEndian
	if len(rec) < 8 {
		return 0, s, 0, fmt.Errorf("perf record of %d bytes: %w", len(rec), ErrMalformed)
	}
	kind = le.Uint32(rec)
	body := rec[8:]
	switch kind {
	case recLost:
		if len(body) < 16 {
			return kind, s, 0, fmt.Errorf("lost record of %d bytes: %w", len(rec), ErrMalformed)
		}
		return kind, s, le.Uint64(body[8:]), nil
	case recSample:
	default:
		return kind, s, 0, nil
	}
	// ip, pid+tid, time, cpu+res, period, nr
	const fixed = 6 * 8
	if len(body) < fixed {
		return kind, s, 0, fmt.Errorf("sample record of %d bytes: %w", len(rec), ErrMalformed)
	}
	s.PID, s.TID = le.Uint32(body[8:]), le.Uint32(body[12:])
	s.Time = le.Uint64(body[16:])
	s.CPU = le.Uint32(body[24:])
	s.Period = le.Uint64(body[32:])
	nr := le.Uint64(body[40:])
	rest := body[fixed:]
	if nr > uint64(len(rest)/8) {
		return kind, s, 0, fmt.Errorf("sample call chain of %d frames in %d bytes: %w", nr, len(rest), ErrMalformed)
	}
	s.Chain = make([]uint64, nr)
	for i := range s.Chain {
		s.Chain[i] = le.Uint64(rest[8*i:])
	}
	return kind, s, 0, nil
}
