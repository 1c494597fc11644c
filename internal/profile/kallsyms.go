package profile

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// ksym is one kernel symbol: its address, name and module ("" for the kernel image).
type ksym struct {
	Addr   uint64
	Name   string
	Module string
}

// Kallsyms names kernel addresses from /proc/kallsyms.
type Kallsyms struct {
	syms []ksym // by address
}

// ReadKallsyms reads procRoot/kallsyms. Without CAP_SYSLOG (or with kernel.kptr_restrict=2) every address
// reads as zero: the error then says so.
func ReadKallsyms(procRoot string) (*Kallsyms, error) {
	path := filepath.Join(procRoot, "kallsyms")
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w: kernel frames will be [kernel] without names", path, err)
	}
	k, err := parseKallsyms(b)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if len(k.syms) == 0 {
		return nil, fmt.Errorf("%s shows no addresses (kernel.kptr_restrict, or no CAP_SYSLOG): run as root or sysctl -w kernel.kptr_restrict=0 to name kernel frames", path)
	}
	return k, nil
}

// parseKallsyms parses /proc/kallsyms lines "ADDR TYPE NAME [MODULE]", keeping text symbols (t, T, w, W)
// with a nonzero address.
func parseKallsyms(b []byte) (*Kallsyms, error) {
	k := &Kallsyms{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for n := 1; sc.Scan(); n++ {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if len(f) < 3 || len(f[1]) != 1 {
			return nil, fmt.Errorf("kallsyms line %d %q: %w", n, sc.Text(), ErrMalformed)
		}
		addr, err := strconv.ParseUint(f[0], 16, 64)
		if err != nil {
			return nil, fmt.Errorf("kallsyms line %d %q: %w", n, sc.Text(), ErrMalformed)
		}
		switch f[1] {
		case "t", "T", "w", "W":
		default:
			continue
		}
		if addr == 0 {
			continue
		}
		s := ksym{Addr: addr, Name: f[2]}
		if len(f) > 3 {
			s.Module = strings.Trim(f[3], "[]")
		}
		k.syms = append(k.syms, s)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("kallsyms: %w: %w", err, ErrMalformed)
	}
	sort.SliceStable(k.syms, func(i, j int) bool { return k.syms[i].Addr < k.syms[j].Addr })
	return k, nil
}

// Lookup names a kernel address: the symbol at or below it and its module ("" for the kernel image). ok is
// false below the first symbol.
func (k *Kallsyms) Lookup(addr uint64) (name, module string, ok bool) {
	if k == nil {
		return "", "", false
	}
	i := sort.Search(len(k.syms), func(i int) bool { return k.syms[i].Addr > addr })
	if i == 0 {
		return "", "", false
	}
	s := k.syms[i-1]
	return s.Name, s.Module, true
}
