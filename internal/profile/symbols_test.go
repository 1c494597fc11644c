package profile

import (
	"bytes"
	"debug/elf"
	"debug/gosym"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"
)

// TestSymbolsMissing: a binary that cannot be read, and a kallsyms that is missing, each give a clear
// message, and their frames are still named: [unknown] with the binary's name, or [kernel].
func TestSymbolsMissing(t *testing.T) {
	t.Parallel()
	if _, err := ReadKallsyms("/nonexistent"); err == nil || !strings.Contains(err.Error(), "kernel frames will be [kernel]") {
		t.Errorf("ReadKallsyms of a missing file: %v", err)
	}
	sym := NewSymbolizer("/nonexistent", nil)
	p := &Proc{PID: 1, Maps: []Mapping{{Start: 0x400000, End: 0x500000, Dev: "fe:00", Inode: 7, Path: "/gone/libstripped.so"}}}
	chain := []uint64{contextKernel, 0xffffffff81000a10, contextUser, 0x400100, 0x900000}
	sym.Prepare(RawSample{Chain: chain}, p)
	got := sym.Frames(chain, p)
	want := []string{"[kernel]", "[unknown] libstripped.so", "[unknown]"}
	for i, f := range got {
		if i >= len(want) || f.Name != want[i] {
			t.Fatalf("frames %+v, want names %v", got, want)
		}
	}
	if why := sym.Missing["/gone/libstripped.so"]; !strings.Contains(why, "no such file") {
		t.Errorf("missing reason %q", why)
	}
	var b bytes.Buffer
	if err := WriteTable(&b, Summary{Event: "cpu-clock", Frequency: 99, CPUs: 2, Seconds: 1, SelfMillicores: -1, MissingSymbols: sym.Missing}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "no symbols for /gone/libstripped.so (") || !strings.Contains(b.String(), "its frames are [unknown]") {
		t.Errorf("table does not say which binary lacks symbols:\n%s", b.String())
	}
}

// TestSymbolsSelf names functions of this test binary (a Go binary: its ELF symbol table) and of the C
// library from the process's own maps, as their runtime knows them.
func TestSymbolsSelf(t *testing.T) {
	t.Parallel()
	pid := os.Getpid()
	maps, err := ReadMaps("/proc", pid)
	if err != nil {
		t.Fatal(err)
	}
	pc := reflect.ValueOf(TestSymbolsSelf).Pointer() + 8
	sym := NewSymbolizer("/proc", nil)
	p := &Proc{PID: pid, Maps: maps}
	got := sym.Frames([]uint64{contextUser, uint64(pc)}, p)
	if want := runtime.FuncForPC(pc).Name(); len(got) != 1 || got[0].Name != want {
		t.Errorf("frame of %#x: %+v, want %s", pc, got, want)
	}
	if len(sym.Missing) > 0 {
		t.Errorf("missing symbols: %v", sym.Missing)
	}
}

// TestSymbolsAgree: the one-pass readers name addresses as debug/elf and debug/gosym do, decoding every
// symbol: this test binary (a Go binary linked without .symtab: its .gopclntab), the go command (a Go
// binary with .symtab) and the C library (.symtab or .dynsym), at addresses spread over their code.
func TestSymbolsAgree(t *testing.T) {
	t.Parallel()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	paths := []string{self}
	if goBin, err := exec.LookPath("go"); err == nil {
		paths = append(paths, goBin)
	}
	maps, err := ReadMaps("/proc", os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range maps {
		if strings.Contains(filepath.Base(m.Path), "libc.so") {
			paths = append(paths, m.Path)
			break
		}
	}
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			t.Parallel()
			b, err := openELF(path)
			if err != nil {
				t.Skipf("%v", err)
			}
			defer b.close()
			t.Logf("%s: .symtab %v, .gopclntab %v", path, b.ef.Section(".symtab") != nil, b.ef.Section(".gopclntab") != nil)
			want := referenceNames(t, path)
			text := b.ef.Section(".text")
			if text == nil {
				t.Skip("no .text")
			}
			rng := rand.New(rand.NewPCG(1, 2))
			var offs []uint64
			for range 3000 {
				offs = append(offs, text.Offset+rng.Uint64N(text.Size))
			}
			for _, off := range offs {
				b.ask(off)
			}
			if err := b.resolve(); err != nil {
				t.Fatal(err)
			}
			named := 0
			for _, off := range offs {
				v, _ := b.vaddr(off)
				got, ok, err := b.lookup(off)
				if err != nil {
					t.Fatal(err)
				}
				if w := want(v); ok != (len(w) > 0) || ok && !slices.Contains(w, got) {
					t.Errorf("%s at %#x: %q, want one of %q", path, v, got, w)
				}
				if ok {
					named++
				}
			}
			if named < len(offs)/10 {
				t.Errorf("%s: %d of %d addresses named", path, named, len(offs))
			}
		})
	}
}

// referenceNames returns the names of a binary's function at an address (none: unnamed), found by
// decoding every symbol with debug/elf and debug/gosym, as tare did before it read only the symbols a
// profile uses.
func referenceNames(t *testing.T, path string) func(uint64) []string {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	fromSymtab := err == nil && len(syms) > 0
	if !fromSymtab {
		syms, _ = f.DynamicSymbols()
	}
	var funcs []elf.Symbol
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Value != 0 {
			funcs = append(funcs, s)
		}
	}
	sort.Slice(funcs, func(i, j int) bool { return funcs[i].Value < funcs[j].Value })
	var gotab *gosym.Table
	if _, err := f.Symbols(); err != nil {
		if pcln, text := f.Section(".gopclntab"), f.Section(".text"); pcln != nil && text != nil {
			data, err := pcln.Data()
			if err != nil {
				t.Fatal(err)
			}
			if gotab, err = gosym.NewTable(nil, gosym.NewLineTable(data, text.Addr)); err != nil {
				t.Fatal(err)
			}
		}
	}
	return func(v uint64) []string {
		if gotab != nil {
			if fn := gotab.PCToFunc(v); fn != nil {
				return []string{fn.Name}
			}
		}
		i := sort.Search(len(funcs), func(i int) bool { return funcs[i].Value > v })
		if i == 0 {
			return nil
		}
		// Every symbol at that address (aliases: calloc, __libc_calloc) is a right name.
		var names []string
		for j := i - 1; j >= 0 && funcs[j].Value == funcs[i-1].Value; j-- {
			if s := funcs[j]; s.Size == 0 || v < s.Value+s.Size {
				name, _, _ := strings.Cut(s.Name, "@")
				names = append(names, name)
			}
		}
		return names
	}
}
