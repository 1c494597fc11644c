package profile

import (
	"cmp"
	"debug/elf"
	"debug/gosym"
	"fmt"
	"io"
	"sort"
)

// Magic numbers of the Go 1.18 and Go 1.20 layouts of .gopclntab (runtime/symtab.go), which this reader
// walks directly; older layouts go through debug/gosym, which decodes every function of the table.
const (
	pclntab118 = 0xfffffff0
	pclntab120 = 0xfffffff1
)

// goNames names each unnamed address of vaddrs (sorted) from the binary's .gopclntab: the Go function
// whose code holds it. It reads the table's header and function index, then one entry and one name per
// function named, rather than the whole table. A binary without the table names nothing.
func (b *elfBinary) goNames(vaddrs []uint64, names []string) error {
	pcln, text := b.ef.Section(".gopclntab"), b.ef.Section(".text")
	if pcln == nil || text == nil {
		return nil
	}
	var hdr [8 + 8*8]byte
	if _, err := pcln.ReadAt(hdr[:], 0); err != nil {
		return fmt.Errorf("reading the go symbol table: %w", err)
	}
	bo := b.ef.ByteOrder
	magic, ptr := bo.Uint32(hdr[:]), int(hdr[7])
	if magic != pclntab118 && magic != pclntab120 || ptr != 4 && ptr != 8 {
		return b.goNamesOld(pcln, text, vaddrs, names)
	}
	word := func(i int) uint64 {
		if ptr == 4 {
			return uint64(bo.Uint32(hdr[8+i*ptr:]))
		}
		return bo.Uint64(hdr[8+i*ptr:])
	}
	nfunc, nameOff, funcOff := word(0), word(3), word(7)
	if nfunc == 0 || nfunc > pcln.Size/8 {
		return nil
	}
	// The index: nfunc pairs of (entry offset from the start of text, offset of the function's entry), then
	// the end of the last function.
	index := make([]byte, (2*nfunc+1)*4)
	if _, err := pcln.ReadAt(index, int64(funcOff)); err != nil {
		return fmt.Errorf("reading the go symbol table: %w", err)
	}
	// The table's text start may be unrelocated: debug/gosym uses the section's address too.
	entry := func(i int) uint64 { return text.Addr + uint64(bo.Uint32(index[8*i:])) }
	end := text.Addr + uint64(bo.Uint32(index[8*nfunc:]))
	// Each function's entry, then its name, read in offset order.
	fns := make([]int64, len(vaddrs))
	for i, v := range vaddrs {
		fns[i] = -1
		if names[i] == "" && v >= entry(0) && v < end {
			k := sort.Search(int(nfunc), func(j int) bool { return entry(j) > v }) - 1
			fns[i] = int64(funcOff) + int64(bo.Uint32(index[8*k+4:]))
		}
	}
	w := window{r: pcln}
	nameAt := make([]int64, len(vaddrs))
	for i := range nameAt {
		nameAt[i] = -1
	}
	for _, i := range byOffset(fns) {
		fn, err := w.at(fns[i], 8) // _func: entry offset, name offset
		if err != nil || len(fn) < 8 {
			return fmt.Errorf("reading the go symbol table: function entry at %d: %w", fns[i], cmp.Or(err, io.ErrUnexpectedEOF))
		}
		nameAt[i] = int64(nameOff) + int64(int32(bo.Uint32(fn[4:])))
	}
	if err := readStrings(pcln, nameAt, names); err != nil {
		return fmt.Errorf("reading the go symbol table: %w", err)
	}
	return nil
}

// goNamesOld names addresses from a .gopclntab of Go 1.17 or older through debug/gosym.
func (b *elfBinary) goNamesOld(pcln, text *elf.Section, vaddrs []uint64, names []string) error {
	data, err := pcln.Data()
	if err != nil {
		return fmt.Errorf("reading the go symbol table: %w", err)
	}
	t, err := gosym.NewTable(nil, gosym.NewLineTable(data, text.Addr))
	if err != nil {
		return nil //nolint:nilerr // not a table debug/gosym knows: its functions stay unnamed
	}
	for i, v := range vaddrs {
		if fn := t.PCToFunc(v); fn != nil && names[i] == "" {
			names[i] = fn.Name
		}
	}
	return nil
}
