package profile

import (
	"cmp"
	"debug/elf"
	"debug/gosym"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
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

// Symbolizer names the addresses of call chains. It reads each binary's symbols once, however many samples
// and processes use it. It is not safe for concurrent use.
type Symbolizer struct {
	procRoot string
	kernel   *Kallsyms
	bins     map[string]*elfSyms
	// Missing are the binaries whose symbols could not be read, and why.
	Missing map[string]string
}

// NewSymbolizer names kernel frames with k (nil: every kernel frame is [kernel]) and user frames from the
// binaries of each process, opened through procRoot/PID/root so that a container's own files are read.
func NewSymbolizer(procRoot string, k *Kallsyms) *Symbolizer {
	return &Symbolizer{procRoot: procRoot, kernel: k, bins: map[string]*elfSyms{}, Missing: map[string]string{}}
}

// UseKallsyms names kernel frames with k from now on (nil: [kernel]). Kernel symbols do not depend on any
// process, so they may be read after the recording.
func (s *Symbolizer) UseKallsyms(k *Kallsyms) { s.kernel = k }

// contextMax is PERF_CONTEXT_MAX as an unsigned address: entries at or above it are context markers.
const (
	contextMax    = uint64(1<<64 + unix.PERF_CONTEXT_MAX)
	contextKernel = uint64(1<<64 + unix.PERF_CONTEXT_KERNEL)
	contextUser   = uint64(1<<64 + unix.PERF_CONTEXT_USER)
)

// Frames names a call chain, leaf first. p (nil when the process was gone) gives the user mappings.
func (s *Symbolizer) Frames(chain []uint64, p *Proc) []Frame {
	out := make([]Frame, 0, len(chain))
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
		if kernel {
			out = append(out, s.kernelFrame(pc))
		} else {
			out = append(out, s.userFrame(pc, p))
		}
	}
	return out
}

func (s *Symbolizer) kernelFrame(pc uint64) Frame {
	name, mod, ok := s.kernel.Lookup(pc)
	switch {
	case !ok:
		return Frame{Name: "[kernel]", Module: "[kernel.kallsyms]", Kernel: true}
	case mod != "":
		return Frame{Name: name, Module: "[" + mod + "]", Kernel: true}
	}
	return Frame{Name: name, Module: "[kernel.kallsyms]", Kernel: true}
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
	b := s.binary(p.PID, m)
	if name, ok := b.lookup(pc - m.Start + m.Offset); ok {
		return Frame{Name: name, Module: m.Path}
	}
	return Frame{Name: "[unknown] " + filepath.Base(m.Path), Module: m.Path}
}

// Prepare reads the symbols of the binaries a sample's user frames are in, if not read yet, so that
// they are found after the process exits (its files are opened through the process, which then must
// still run). Only binaries that samples hit are read.
func (s *Symbolizer) Prepare(smp RawSample, p *Proc) {
	if p == nil {
		return
	}
	user := false
	for _, a := range smp.Chain {
		switch {
		case a == contextUser:
			user = true
		case a >= contextMax:
			user = false
		case user:
			if m, ok := find(p.Maps, a); ok && m.Path != "" && !strings.HasPrefix(m.Path, "[") {
				s.binary(p.PID, m)
			}
		}
	}
}

// binary returns the symbols of a mapping's file, read at its first use: through the process's
// map_files link (which also opens a deleted file), else its root directory (a container's files), else
// the same path on this host.
func (s *Symbolizer) binary(pid int, m Mapping) *elfSyms {
	key := m.Dev + ":" + strconv.FormatUint(m.Inode, 10)
	if m.Inode == 0 {
		key = m.Path
	}
	if b, ok := s.bins[key]; ok {
		return b
	}
	dir := filepath.Join(s.procRoot, strconv.Itoa(pid))
	path := strings.TrimSuffix(m.Path, " (deleted)")
	var b *elfSyms
	var first error
	for _, try := range []string{
		filepath.Join(dir, "map_files", fmt.Sprintf("%x-%x", m.Start, m.End)),
		filepath.Join(dir, "root", path),
		path,
	} {
		var err error
		if b, err = readELFSyms(try); err == nil {
			break
		}
		if first == nil {
			first = err
		}
	}
	if b == nil {
		s.Missing[m.Path] = first.Error()
		b = &elfSyms{}
	}
	s.bins[key] = b
	return b
}

// elfSym is a function symbol: its virtual address, size (0: unknown) and name.
type elfSym struct {
	addr, size uint64
	name       string
}

// elfSyms are a binary's function symbols and the loadable segments that map file offsets to them.
type elfSyms struct {
	syms  []elfSym // by address
	loads []elf.ProgHeader
	gotab *gosym.Table // a Go binary's pclntab
}

// readELFSyms reads the function symbols of an ELF file: .symtab, else .dynsym, and for a Go binary the Go
// runtime's own table .gopclntab.
func readELFSyms(path string) (*elfSyms, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading the symbols of %s: %w", path, err)
	}
	defer func() { _ = f.Close() }()
	b := &elfSyms{}
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD {
			b.loads = append(b.loads, p.ProgHeader)
		}
	}
	// .symtab holds every function; a stripped library keeps only its exported ones in .dynsym.
	syms, err := f.Symbols()
	if err != nil || len(syms) == 0 {
		syms, _ = f.DynamicSymbols()
	}
	for _, sym := range syms {
		if elf.ST_TYPE(sym.Info) == elf.STT_FUNC && sym.Value != 0 {
			name, _, _ := strings.Cut(sym.Name, "@") // versioned dynamic symbols: memcpy@@GLIBC_2.14
			b.syms = append(b.syms, elfSym{addr: sym.Value, size: sym.Size, name: name})
		}
	}
	slices.SortFunc(b.syms, func(x, y elfSym) int { return cmp.Compare(x.addr, y.addr) })
	// A Go binary whose ELF symbol table was stripped (go build -ldflags=-s; go test links that way) still
	// has the Go runtime's own table, which names every Go function; it is costlier to read, so only then.
	hasGo := false
	for _, s := range b.syms {
		if s.name == "runtime.main" {
			hasGo = true
			break
		}
	}
	if !hasGo {
		b.gotab = goTable(f)
	}
	return b, nil
}

// goTable reads a Go binary's .gopclntab, which stripping (-s) keeps, or nil.
func goTable(f *elf.File) *gosym.Table {
	pcln, text := f.Section(".gopclntab"), f.Section(".text")
	if pcln == nil || text == nil {
		return nil
	}
	data, err := pcln.Data()
	if err != nil {
		return nil
	}
	t, err := gosym.NewTable(nil, gosym.NewLineTable(data, text.Addr))
	if err != nil {
		return nil
	}
	return t
}

// lookup names the function at a file offset of the binary.
func (b *elfSyms) lookup(off uint64) (string, bool) {
	vaddr, ok := b.vaddr(off)
	if !ok {
		return "", false
	}
	if b.gotab != nil {
		if fn := b.gotab.PCToFunc(vaddr); fn != nil {
			return fn.Name, true
		}
	}
	i := sort.Search(len(b.syms), func(i int) bool { return b.syms[i].addr > vaddr })
	if i == 0 {
		return "", false
	}
	s := b.syms[i-1]
	if s.size > 0 && vaddr >= s.addr+s.size {
		return "", false
	}
	return s.name, true
}

// vaddr turns a file offset into the address the binary's symbols use, through its loadable segments.
func (b *elfSyms) vaddr(off uint64) (uint64, bool) {
	for _, p := range b.loads {
		if off >= p.Off && off < p.Off+p.Filesz {
			return off - p.Off + p.Vaddr, true
		}
	}
	return 0, false
}
