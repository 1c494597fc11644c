package profile

import (
	"bytes"
	"cmp"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"
)

// elfBinary is one binary that samples hit: its file, held open from the first sample until the Symbolizer
// is closed (so that it can be read after its process exits), and the names of the addresses looked up so
// far. Its symbol table is read only when names are asked for, and then only for those addresses: a
// binary's table can hold hundreds of thousands of symbols of which a profile uses a few hundred.
type elfBinary struct {
	path  string // as the process maps it
	f     *os.File
	ef    *elf.File
	loads []elf.ProgHeader
	// names maps a file offset to its function's name ("" when the binary has none for it).
	names map[uint64]string
	// want are file offsets not yet named.
	want []uint64
}

// openELF opens the binary at path and reads its headers (not its symbols).
func openELF(path string) (*elfBinary, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading the symbols of %s: %w", path, err)
	}
	ef, err := elf.NewFile(f)
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("reading the symbols of %s: %w", path, err)
	}
	b := &elfBinary{f: f, ef: ef, names: map[uint64]string{}}
	for _, p := range ef.Progs {
		if p.Type == elf.PT_LOAD {
			b.loads = append(b.loads, p.ProgHeader)
		}
	}
	return b, nil
}

func (b *elfBinary) close() {
	if b.f != nil {
		_ = b.f.Close()
	}
}

// ask queues a file offset to be named by resolve; it reports whether one was queued.
func (b *elfBinary) ask(off uint64) bool {
	if _, ok := b.names[off]; ok {
		return false
	}
	b.names[off] = ""
	b.want = append(b.want, off)
	return true
}

// resolve names every queued offset with one pass over the binary's symbol table: .symtab, else .dynsym,
// and, for a Go binary whose .symtab was stripped (go build -ldflags=-s; go test and go run link that way),
// the Go runtime's own table .gopclntab, which names every Go function.
func (b *elfBinary) resolve() error {
	if len(b.want) == 0 {
		return nil
	}
	type want struct{ off, vaddr uint64 }
	var ws []want
	for _, off := range b.want {
		if v, ok := b.vaddr(off); ok {
			ws = append(ws, want{off, v})
		}
	}
	b.want = b.want[:0]
	if len(ws) == 0 {
		return nil
	}
	vaddrs := make([]uint64, len(ws))
	for i, w := range ws {
		vaddrs[i] = w.vaddr
	}
	slices.Sort(vaddrs)
	vaddrs = slices.Compact(vaddrs)
	names := make([]string, len(vaddrs))
	symtab := b.ef.SectionByType(elf.SHT_SYMTAB)
	n, err := b.scan(symtab, vaddrs, names)
	if err != nil {
		return err
	}
	if symtab == nil || n == 0 {
		if symtab == nil {
			if err := b.goNames(vaddrs, names); err != nil {
				return err
			}
		}
		// A stripped library keeps only its exported functions in .dynsym; a Go binary's cgo code too.
		if _, err := b.scan(b.ef.SectionByType(elf.SHT_DYNSYM), vaddrs, names); err != nil {
			return err
		}
	}
	for _, w := range ws {
		i, _ := slices.BinarySearch(vaddrs, w.vaddr)
		b.names[w.off] = names[i]
	}
	return nil
}

// lookup names the function at a file offset of the binary, resolving it first if it is new.
func (b *elfBinary) lookup(off uint64) (string, bool, error) {
	if b.ask(off) {
		if err := b.resolve(); err != nil {
			return "", false, err
		}
	}
	name := b.names[off]
	return name, name != "", nil
}

// vaddr turns a file offset into the address the binary's symbols use, through its loadable segments.
func (b *elfBinary) vaddr(off uint64) (uint64, bool) {
	for _, p := range b.loads {
		if off >= p.Off && off < p.Off+p.Filesz {
			return off - p.Off + p.Vaddr, true
		}
	}
	return 0, false
}

// symCand is the best function symbol found so far for an address: the highest at or below it.
type symCand struct {
	value, size uint64
	name        uint32 // offset in the string table
	ok          bool
}

// scan reads a symbol table section once and names each of vaddrs (sorted, unique) that is still unnamed
// in names with the function symbol at or below it (within its size, when it has one). It returns the
// number of function symbols in the table. Only the names it uses are read from the string table.
//
// Each function symbol is put in the bucket of the first wanted address at or above it, keeping the
// highest per bucket; an address's symbol is then the last filled bucket at or before its own. This costs
// a binary search over the wanted addresses per symbol and allocates nothing per symbol.
func (b *elfBinary) scan(sec *elf.Section, vaddrs []uint64, names []string) (int, error) {
	if sec == nil || sec.Type == elf.SHT_NOBITS {
		return 0, nil
	}
	size := 24
	if b.ef.Class == elf.ELFCLASS32 {
		size = 16
	}
	bo := b.ef.ByteOrder
	best := make([]symCand, len(vaddrs))
	nfunc := 0
	buf := make([]byte, 4096*size)
	r := sec.Open()
	for {
		n, err := io.ReadFull(r, buf)
		n -= n % size
		for e := 0; e < n; e += size {
			ent := buf[e : e+size]
			var c symCand
			var info byte
			if size == 24 {
				c = symCand{name: bo.Uint32(ent), value: bo.Uint64(ent[8:]), size: bo.Uint64(ent[16:]), ok: true}
				info = ent[4]
			} else {
				c = symCand{name: bo.Uint32(ent), value: uint64(bo.Uint32(ent[4:])), size: uint64(bo.Uint32(ent[8:])), ok: true}
				info = ent[12]
			}
			if elf.ST_TYPE(info) != elf.STT_FUNC || c.value == 0 {
				continue
			}
			nfunc++
			j := sort.Search(len(vaddrs), func(i int) bool { return vaddrs[i] >= c.value })
			if j < len(vaddrs) && (!best[j].ok || c.value > best[j].value || c.value == best[j].value && best[j].size == 0) {
				best[j] = c
			}
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			break
		}
		if err != nil {
			return 0, fmt.Errorf("reading the symbols: %w", err)
		}
	}
	var strtab *elf.Section
	if int(sec.Link) < len(b.ef.Sections) {
		strtab = b.ef.Sections[sec.Link]
	}
	if strtab == nil {
		return nfunc, nil
	}
	var cur symCand
	offs := make([]int64, len(vaddrs))
	for i, v := range vaddrs {
		if best[i].ok {
			cur = best[i]
		}
		offs[i] = -1
		if names[i] == "" && cur.ok && (cur.size == 0 || v < cur.value+cur.size) {
			offs[i] = int64(cur.name)
		}
	}
	if err := readStrings(strtab, offs, names); err != nil {
		return 0, fmt.Errorf("reading the symbols: %w", err)
	}
	for i, name := range names {
		names[i], _, _ = strings.Cut(name, "@") // versioned dynamic symbols: memcpy@@GLIBC_2.14
	}
	return nfunc, nil
}

// readStrings reads the NUL-terminated string at each offset of offs that is not negative into out, in
// offset order through a window of r, so that nearby strings cost one read.
func readStrings(r io.ReaderAt, offs []int64, out []string) error {
	w := window{r: r}
	for _, i := range byOffset(offs) {
		s, err := w.cString(offs[i])
		if err != nil {
			return err
		}
		out[i] = s
	}
	return nil
}

// byOffset returns the indices of the offsets that are not negative, in offset order.
func byOffset(offs []int64) []int {
	order := make([]int, 0, len(offs))
	for i, off := range offs {
		if off >= 0 {
			order = append(order, i)
		}
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(offs[a], offs[b]) })
	return order
}

// window reads an io.ReaderAt in blocks, keeping the last: reads in offset order then cost a system call
// per block rather than per read.
type window struct {
	r    io.ReaderAt
	base int64
	buf  []byte
}

const windowSize = 8 << 10

// at returns n bytes at off (fewer at the end of r).
func (w *window) at(off int64, n int) ([]byte, error) {
	if off < w.base || off+int64(n) > w.base+int64(len(w.buf)) {
		if cap(w.buf) < max(n, windowSize) {
			w.buf = make([]byte, max(n, windowSize))
		}
		k, err := w.r.ReadAt(w.buf[:cap(w.buf)], off)
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		w.base, w.buf = off, w.buf[:k]
	}
	b := w.buf[off-w.base:]
	return b[:min(n, len(b))], nil
}

// cString returns the NUL-terminated string at off (up to the end of r).
func (w *window) cString(off int64) (string, error) {
	for n := 256; ; n *= 4 {
		b, err := w.at(off, n)
		if err != nil {
			return "", err
		}
		if i := bytes.IndexByte(b, 0); i >= 0 {
			return string(b[:i]), nil
		}
		if len(b) < n {
			return string(b), nil
		}
	}
}
