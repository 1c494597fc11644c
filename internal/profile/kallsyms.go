package profile

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
)

// Kallsyms names kernel addresses from /proc/kallsyms. The file is read when names are asked for, in one
// pass for all the addresses asked, and only their symbols' names are kept: a kernel has a hundred thousand
// symbols or more, a profile's kernel frames a few thousand addresses.
type Kallsyms struct {
	name     string // for errors
	open     func() (io.ReadCloser, error)
	procRoot string
	cache    string // the file of this boot's image symbols (UseCache), or ""
}

// kname is a kernel symbol's name and module ("" for the kernel image).
type kname struct{ name, module string }

// ReadKallsyms checks that procRoot/kallsyms can be read and shows addresses. Without CAP_SYSLOG (or with
// kernel.kptr_restrict=2) every address reads as zero: the error then says so.
func ReadKallsyms(procRoot string) (*Kallsyms, error) {
	path := filepath.Join(procRoot, "kallsyms")
	k := &Kallsyms{name: path, open: func() (io.ReadCloser, error) { return os.Open(path) }, procRoot: procRoot}
	f, err := k.open()
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w: kernel frames will be [kernel] without names", path, err)
	}
	defer func() { _ = f.Close() }()
	shown := false
	if err := scanKallsyms(f, func(uint64, []byte) bool { shown = true; return false }); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if !shown {
		return nil, fmt.Errorf("%s shows no addresses (kernel.kptr_restrict, or no CAP_SYSLOG): run as root or sysctl -w kernel.kptr_restrict=0 to name kernel frames", path)
	}
	return k, nil
}

// parseKallsyms checks a whole kallsyms file and returns it as a Kallsyms, and its number of symbols.
func parseKallsyms(b []byte) (*Kallsyms, int, error) {
	n := 0
	if err := scanKallsyms(bytes.NewReader(b), func(uint64, []byte) bool { n++; return true }); err != nil {
		return nil, 0, err
	}
	return &Kallsyms{name: "kallsyms", open: func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }}, n, nil
}

// scanKallsyms parses kallsyms lines "ADDR TYPE NAME [MODULE]" and calls fn with each text symbol (t, T, w,
// W) of nonzero address and the rest of its line from its name on (splitName parses it), until fn returns
// false. rest is valid only during the call: a caller that keeps few of the symbols splits only those.
func scanKallsyms(r io.Reader, fn func(addr uint64, rest []byte) bool) error {
	br := bufio.NewReaderSize(r, 64<<10)
	for n := 1; ; n++ {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			return fmt.Errorf("kallsyms line %d longer than %d bytes: %w", n, len(line), ErrMalformed)
		}
		addr, typ, rest, ok := splitLine(line)
		if !ok {
			return fmt.Errorf("kallsyms line %d %q: %w", n, bytes.TrimSpace(line), ErrMalformed)
		}
		switch typ {
		case 't', 'T', 'w', 'W':
			if addr != 0 && !fn(addr, rest) {
				return nil
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("kallsyms: %w", err)
		}
	}
}

// splitLine splits a kallsyms line into its address, its type and the rest from the name on; a blank line
// has type 0. ok is false for a malformed line.
func splitLine(line []byte) (addr uint64, typ byte, rest []byte, ok bool) {
	// The kernel's own layout, "ADDR T NAME...", is taken without splitting every field.
	if sp := bytes.IndexByte(line, ' '); sp > 0 && sp+3 < len(line) && line[sp+2] == ' ' && !isSpace(line[sp+1]) && !isSpace(line[sp+3]) {
		if addr, ok := parseHex(line[:sp]); ok {
			return addr, line[sp+1], line[sp+3:], true
		}
	}
	var f [3][]byte
	nf := fields(line, f[:])
	if nf == 0 {
		return 0, 0, nil, true
	}
	addr, ok = parseHex(f[0])
	if nf < 3 || len(f[1]) != 1 || !ok {
		return 0, 0, nil, false
	}
	return addr, f[1][0], line[cap(line)-cap(f[2]):], true
}

// splitName returns the name and the module (without brackets) of the rest of a kallsyms line.
func splitName(rest []byte) (name, module []byte) {
	var f [2][]byte
	fields(rest, f[:])
	return f[0], bytes.Trim(f[1], "[]")
}

// fields splits line at ASCII white space into at most len(f) fields (the last one ends at the next space),
// and returns how many it found.
func fields(line []byte, f [][]byte) int {
	nf := 0
	for i := 0; i < len(line) && nf < len(f); {
		for i < len(line) && isSpace(line[i]) {
			i++
		}
		if i == len(line) {
			break
		}
		j := i
		for j < len(line) && !isSpace(line[j]) {
			j++
		}
		f[nf] = line[i:j]
		nf++
		i = j
	}
	return nf
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

// parseHex parses a hexadecimal number of at most 64 bits, as strconv.ParseUint(s, 16, 64) does.
func parseHex(s []byte) (uint64, bool) {
	if len(s) == 0 {
		return 0, false
	}
	var v uint64
	for _, c := range s {
		var d byte
		switch {
		case '0' <= c && c <= '9':
			d = c - '0'
		case 'a' <= c && c <= 'f':
			d = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, false
		}
		if v>>60 != 0 {
			return 0, false
		}
		v = v<<4 | uint64(d)
	}
	return v, true
}

// Lookup names a kernel address: the symbol at or below it and its module ("" for the kernel image). ok is
// false below the first symbol. Each call reads the file: to name many addresses, use names.
func (k *Kallsyms) Lookup(addr uint64) (name, module string, ok bool) {
	if k == nil {
		return "", "", false
	}
	got, err := k.names([]uint64{addr})
	if err != nil || got[0] == (kname{}) {
		return "", "", false
	}
	return got[0].name, got[0].module, true
}

// names names each of addrs (sorted, unique) with the symbol at or below it, in one pass over the file; an
// address below every symbol gets the zero kname. Of equal addresses the last in the file wins. With a
// cache (UseCache), addresses within the kernel image are named from the cache, and a pass over the file
// writes it.
func (k *Kallsyms) names(addrs []uint64) ([]kname, error) {
	if len(addrs) == 0 {
		return nil, nil
	}
	if k.cache != "" {
		if got, ok := k.namesCached(addrs); ok {
			return got, nil
		}
	}
	f, err := k.open()
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", k.name, err)
	}
	defer func() { _ = f.Close() }()
	var image *bytes.Buffer
	if k.cache != "" {
		image = &bytes.Buffer{}
	}
	got, _, _, err := nameFrom(f, addrs, image)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", k.name, err)
	}
	if image != nil {
		k.writeCache(image.Bytes())
	}
	return got, nil
}

// nameFrom names addrs (sorted, unique) from the kallsyms lines of r. lo and hi are the lowest and highest
// address of the kernel image's symbols (those without a module); image, when not nil, receives those lines.
//
// Each symbol is put in the bucket of the first asked address at or above it, keeping the highest per
// bucket; an address's symbol is then the last filled bucket at or before its own. Only the bucket's best
// line is kept, copied into the bucket's own buffer: nothing is allocated per symbol.
func nameFrom(r io.Reader, addrs []uint64, image *bytes.Buffer) (got []kname, lo, hi uint64, err error) {
	type cand struct {
		addr uint64
		rest []byte // its line from the name on
		ok   bool
	}
	best := make([]cand, len(addrs))
	lo = math.MaxUint64
	j := -1 // the last symbol's bucket: kallsyms lists the kernel image's symbols in address order
	err = scanKallsyms(r, func(addr uint64, rest []byte) bool {
		// Bucket j holds (addrs[j-1], addrs[j]]; most symbols fall in the one before's.
		if j < 0 || j < len(addrs) && addr > addrs[j] || j > 0 && addr <= addrs[j-1] {
			j = sort.Search(len(addrs), func(i int) bool { return addrs[i] >= addr })
		}
		if j < len(addrs) && (!best[j].ok || addr >= best[j].addr) {
			c := &best[j]
			c.addr, c.ok = addr, true
			c.rest = append(c.rest[:0], rest...)
		}
		if bytes.IndexByte(rest, '[') < 0 { // the kernel image's: a module's line ends in [module]
			lo, hi = min(lo, addr), max(hi, addr)
			if image != nil {
				image.Write(strconv.AppendUint(nil, addr, 16))
				image.WriteString(" t ")
				image.Write(bytes.TrimRight(rest, "\n"))
				image.WriteByte('\n')
			}
		}
		return true
	})
	if err != nil {
		return nil, 0, 0, err
	}
	got = make([]kname, len(addrs))
	var cur kname
	for i := range addrs {
		if best[i].ok {
			name, module := splitName(best[i].rest)
			cur = kname{name: string(name), module: string(module)}
		}
		got[i] = cur
	}
	return got, lo, hi, nil
}

// resolve names the kernel frames at pcs into frames ([kernel] for all of them when k is nil or the file
// cannot be read, with the error).
func (k *Kallsyms) resolve(pcs []uint64, frames map[uint64]Frame) error {
	slices.Sort(pcs)
	pcs = slices.Compact(pcs)
	got := make([]kname, len(pcs))
	var err error
	if k != nil {
		var named []kname
		if named, err = k.names(pcs); err == nil {
			got = named
		}
	}
	for i, pc := range pcs {
		frames[pc] = kernelFrame(got[i])
	}
	return err
}

// kernelFrame is the frame of a kernel symbol ([kernel] when it has no name).
func kernelFrame(n kname) Frame {
	switch {
	case n.name == "":
		return Frame{Name: "[kernel]", Module: "[kernel.kallsyms]", Kernel: true}
	case n.module != "":
		return Frame{Name: n.name, Module: "[" + n.module + "]", Kernel: true}
	}
	return Frame{Name: n.name, Module: "[kernel.kallsyms]", Kernel: true}
}
