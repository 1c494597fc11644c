package profile

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Frame is one named frame of a call chain.
type Frame struct {
	Name   string // function, or [unknown] with the binary's name when it has no symbol
	Module string // the binary's path, [kernel.kallsyms], or the kernel module's [name]
	Kernel bool
}

// Symbolizer names the addresses of call chains. Binaries are opened as samples hit them (Prepare) and
// held open; their symbols are read only when frames are named, once per binary and only for the
// addresses the samples hold. It is not safe for concurrent use; Close releases its files.
type Symbolizer struct {
	procRoot string
	kernel   *Kallsyms
	bins     map[binKey]*elfBinary
	// pending are the binaries with addresses queued for naming.
	pending []*elfBinary
	// kframes are the kernel frames named so far, kwant the kernel addresses queued for naming.
	kframes map[uint64]Frame
	kwant   []uint64
	// Missing are the binaries whose symbols could not be read, and why.
	Missing map[string]string
}

// binKey identifies a binary: its device and inode, or its path when it has no inode.
type binKey struct {
	dev   string
	inode uint64
	path  string
}

// NewSymbolizer names kernel frames with k (nil: every kernel frame is [kernel]) and user frames from the
// binaries of each process, opened through procRoot/PID/root so that a container's own files are read.
func NewSymbolizer(procRoot string, k *Kallsyms) *Symbolizer {
	return &Symbolizer{procRoot: procRoot, kernel: k, bins: map[binKey]*elfBinary{}, kframes: map[uint64]Frame{},
		Missing: map[string]string{}}
}

// UseKallsyms names kernel frames with k from now on (nil: [kernel]). Kernel symbols do not depend on any
// process, so they may be read after the recording.
func (s *Symbolizer) UseKallsyms(k *Kallsyms) {
	s.kernel = k
	clear(s.kframes)
}

// Close releases the binaries held open. Frames named afterwards are [unknown] for binaries not read yet.
func (s *Symbolizer) Close() {
	for _, b := range s.bins {
		b.close()
	}
}

// contextMax is PERF_CONTEXT_MAX as an unsigned address: entries at or above it are context markers.
const (
	contextMax    = uint64(1<<64 + unix.PERF_CONTEXT_MAX)
	contextKernel = uint64(1<<64 + unix.PERF_CONTEXT_KERNEL)
	contextUser   = uint64(1<<64 + unix.PERF_CONTEXT_USER)
)

// Frames names a call chain, leaf first. p (nil when the process was gone) gives the user mappings. To
// name many chains, call Want for each first: the symbols of each binary, and the kernel's, are then
// read once for all of them.
func (s *Symbolizer) Frames(chain []uint64, p *Proc) []Frame {
	s.Want(chain, p)
	s.resolve()
	out := make([]Frame, 0, len(chain))
	walk(chain, func(kernel bool, pc uint64) {
		if kernel {
			out = append(out, s.kframes[pc])
		} else {
			out = append(out, s.userFrame(pc, p))
		}
	})
	return out
}

// walk calls fn with each frame of a chain, leaf first, and whether it is the kernel's: a return address
// is moved back into its call, so that the frame is named after the caller.
func walk(chain []uint64, fn func(kernel bool, pc uint64)) {
	kernel, first := true, true
	for _, a := range chain {
		if a >= contextMax {
			switch a {
			case contextKernel:
				kernel, first = true, true
			case contextUser:
				kernel, first = false, true
			}
			continue
		}
		pc := a
		if !first && pc > 0 {
			pc-- // a return address: the call is the instruction before it
		}
		first = false
		fn(kernel, pc)
	}
}

func (s *Symbolizer) userFrame(pc uint64, p *Proc) Frame {
	if p == nil {
		return Frame{Name: "[unknown]", Module: "[unknown]"}
	}
	m, ok := find(p.Maps, pc)
	if !ok {
		return Frame{Name: "[unknown]", Module: "[unknown]"}
	}
	if m.Path == "" || strings.HasPrefix(m.Path, "[") {
		name := m.Path
		if name == "" {
			name = "[anonymous]" // JIT or generated code
		}
		return Frame{Name: name, Module: name}
	}
	if b := s.binary(p.PID, m); b != nil {
		name, ok, err := b.lookup(pc - m.Start + m.Offset)
		if err != nil {
			s.fail(b.path, b, err)
		}
		if ok {
			return Frame{Name: name, Module: m.Path}
		}
	}
	return Frame{Name: "[unknown] " + filepath.Base(m.Path), Module: m.Path}
}

// Want queues the addresses of a call chain to be named, so that the next Frames reads each binary's
// symbols, and the kernel's, once for all the chains queued.
func (s *Symbolizer) Want(chain []uint64, p *Proc) {
	walk(chain, func(kernel bool, pc uint64) {
		if kernel {
			if _, ok := s.kframes[pc]; !ok {
				s.kwant = append(s.kwant, pc)
			}
			return
		}
		if m, ok := s.fileMapping(p, pc); ok {
			if b := s.binary(p.PID, m); b != nil && b.ask(pc-m.Start+m.Offset) && len(b.want) == 1 {
				s.pending = append(s.pending, b)
			}
		}
	})
}

// fileMapping returns the mapping of a file that holds a user address of p.
func (s *Symbolizer) fileMapping(p *Proc, pc uint64) (Mapping, bool) {
	if p == nil {
		return Mapping{}, false
	}
	m, ok := find(p.Maps, pc)
	return m, ok && m.Path != "" && !strings.HasPrefix(m.Path, "[")
}

// resolve names the queued addresses of the kernel and of every binary.
func (s *Symbolizer) resolve() {
	if len(s.kwant) > 0 {
		if err := s.kernel.resolve(s.kwant, s.kframes); err != nil {
			s.Missing["[kernel.kallsyms]"] = err.Error()
		}
		s.kwant = s.kwant[:0]
	}
	for _, b := range s.pending {
		if err := b.resolve(); err != nil {
			s.fail(b.path, b, err)
		}
	}
	s.pending = s.pending[:0]
}

// fail notes why a binary's symbols could not be read.
func (s *Symbolizer) fail(path string, b *elfBinary, err error) {
	s.Missing[path] = err.Error()
	b.want = b.want[:0]
}

// Prepare opens the binaries a sample's user frames are in, if not open yet, so that their symbols can
// be read after the process exits (its files are opened through the process, which then must still run).
// It reads no symbols: Frames does, for the addresses it names.
func (s *Symbolizer) Prepare(smp RawSample, p *Proc) {
	walk(smp.Chain, func(kernel bool, pc uint64) {
		if m, ok := s.fileMapping(p, pc); ok && !kernel {
			s.binary(p.PID, m)
		}
	})
}

// binary returns a mapping's file, opened at its first use: through the process's map_files link (which
// also opens a deleted file), else its root directory (a container's files), else the same path on this
// host. It returns nil for a file that could not be opened (noted in Missing).
func (s *Symbolizer) binary(pid int, m Mapping) *elfBinary {
	key := binKey{dev: m.Dev, inode: m.Inode}
	if m.Inode == 0 {
		key = binKey{path: m.Path}
	}
	if b, ok := s.bins[key]; ok {
		return b
	}
	dir := filepath.Join(s.procRoot, strconv.Itoa(pid))
	path := strings.TrimSuffix(m.Path, " (deleted)")
	var b *elfBinary
	var first error
	for _, try := range []string{
		filepath.Join(dir, "map_files", fmt.Sprintf("%x-%x", m.Start, m.End)),
		filepath.Join(dir, "root", path),
		path,
	} {
		var err error
		if b, err = openELF(try); err == nil {
			break
		}
		if first == nil {
			first = err
		}
	}
	if b == nil {
		s.Missing[m.Path] = first.Error()
	} else {
		b.path = m.Path
	}
	s.bins[key] = b
	return b
}
