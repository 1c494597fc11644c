package profile

import (
	"bytes"
	"os"
	"reflect"
	"runtime"
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
