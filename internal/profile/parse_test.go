package profile

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseKallsyms(t *testing.T) {
	t.Parallel()
	k, _, err := parseKallsyms(readFixture(t, "kallsyms"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		addr         uint64
		name, module string
		ok           bool
	}{
		{0xffffffff81000a10, "asm_exc_divide_error", "", true},
		{0xffffffff81000a2f, "asm_exc_divide_error", "", true}, // inside it
		{0xffffffff81207615, "abort", "", true},                // a weak symbol
		{0xffffffffc0201010, "ftrace_trampoline", "__builtin__ftrace", true},
		{0x1000, "", "", false}, // below the first symbol
	} {
		name, mod, ok := k.Lookup(c.addr)
		if name != c.name || mod != c.module || ok != c.ok {
			t.Errorf("Lookup(%#x) = %q, %q, %v; want %q, %q, %v", c.addr, name, mod, ok, c.name, c.module, c.ok)
		}
	}
	for _, bad := range []string{"zzzz T name\n", "ffff T\n", "ffff TT name\n"} {
		if _, _, err := parseKallsyms([]byte(bad)); !errors.Is(err, ErrMalformed) {
			t.Errorf("parseKallsyms(%q) = %v, want ErrMalformed", bad, err)
		}
	}
	// Without CAP_SYSLOG every address is zero: nothing is kept.
	if _, n, err := parseKallsyms([]byte("0000000000000000 T _text\n0000000000000000 t foo\n")); err != nil || n != 0 {
		t.Errorf("zero addresses: %v, %d symbols", err, n)
	}
}

func TestParseMaps(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		file string
		want Mapping // one of the executable mappings
		n    int
	}{
		{"maps-etcd", Mapping{Start: 0x402000, End: 0xe02000, Offset: 0x2000, Dev: "fe:00", Inode: 10166419, Path: "/usr/bin/etcd"}, 1},
		{"maps-shim", Mapping{Start: 0x5f2000, End: 0xa67000, Offset: 0x1f2000, Dev: "fe:00", Inode: 10166424, Path: "/usr/bin/containerd-shim-runc-v2"}, 0},
		{"maps-memfd", Mapping{Start: 0x7f6cca0d0000, End: 0x7f6cca1a3000, Offset: 0xa000, Dev: "00:01", Inode: 24, Path: "/memfd:sealed-91173221a7ea (deleted)"}, 0},
	} {
		got, err := parseMaps(readFixture(t, c.file))
		if err != nil {
			t.Fatalf("%s: %v", c.file, err)
		}
		if len(got) == 0 {
			t.Fatalf("%s: no executable mappings", c.file)
		}
		if m, ok := find(got, c.want.Start); !ok {
			t.Errorf("%s: no mapping at %#x", c.file, c.want.Start)
		} else if diff := cmp.Diff(c.want, m); diff != "" {
			t.Errorf("%s mapping at %#x (-want +got):\n%s", c.file, c.want.Start, diff)
		}
		if c.n > 0 && len(got) != c.n {
			t.Errorf("%s: %d executable mappings, want %d", c.file, len(got), c.n)
		}
		for _, m := range got {
			if m, ok := find(got, m.Start); !ok || m.Start > m.End {
				t.Errorf("%s: find(%#x) = %+v, %v", c.file, m.Start, m, ok)
			}
		}
	}
	for _, bad := range []string{"00400000 r-xp 0 fe:00 1 /x\n", "00400000-00300000 r-xp 0 fe:00 1 /x\n", "zz-00500000 r-xp 0 fe:00 1 /x\n", "1-2 r\n"} {
		if _, err := parseMaps([]byte(bad)); !errors.Is(err, ErrMalformed) {
			t.Errorf("parseMaps(%q) = %v, want ErrMalformed", bad, err)
		}
	}
}

// The records are PERF_RECORD_SAMPLEs captured on this machine from a cpu-clock event at 99 Hz on CPU 0:
// two of a thread in user mode, one in a system call (kernel frames, then user frames).
func TestParseRecord(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		file     string
		pid, tid uint32
		kernel   int // kernel frames
		user     int
	}{
		{"record-0.bin", 2263, 2265, 0, 8},
		{"record-1.bin", 2263, 2265, 0, 8},
		{"record-2.bin", 2263, 2263, 4, 4},
	} {
		kind, s, lost, err := parseRecord(readFixture(t, c.file))
		if err != nil || kind != recSample || lost != 0 {
			t.Fatalf("%s: kind %d lost %d err %v", c.file, kind, lost, err)
		}
		if s.PID != c.pid || s.TID != c.tid || s.CPU != 0 || s.Period != 10101010 {
			t.Errorf("%s: %+v", c.file, s)
		}
		frames := NewSymbolizer("/nonexistent", nil).Frames(s.Chain, nil)
		var k, u int
		for _, f := range frames {
			if f.Kernel {
				k++
			} else {
				u++
			}
		}
		if k != c.kernel || u != c.user {
			t.Errorf("%s: %d kernel and %d user frames, want %d and %d", c.file, k, u, c.kernel, c.user)
		}
	}
	rec := readFixture(t, "record-2.bin")
	for _, bad := range [][]byte{rec[:4], rec[:40], rec[:len(rec)-8]} {
		if _, _, _, err := parseRecord(bad); !errors.Is(err, ErrMalformed) {
			t.Errorf("parseRecord of %d bytes = %v, want ErrMalformed", len(bad), err)
		}
	}
}

func FuzzParseKallsyms(f *testing.F) {
	f.Add(readFixture(f, "kallsyms"))
	f.Add([]byte("ffff T x [m]\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		k, _, err := parseKallsyms(b)
		if err == nil {
			k.Lookup(0xffffffff81000000)
		}
	})
}

func FuzzParseMaps(f *testing.F) {
	for _, n := range []string{"maps-etcd", "maps-shim", "maps-memfd"} {
		f.Add(readFixture(f, n))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		maps, err := parseMaps(b)
		if err == nil {
			for _, m := range maps {
				find(maps, m.Start)
			}
		}
	})
}

func FuzzParseRecord(f *testing.F) {
	for _, n := range []string{"record-0.bin", "record-1.bin", "record-2.bin"} {
		f.Add(readFixture(f, n))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		_, s, _, err := parseRecord(b)
		if err == nil {
			NewSymbolizer("/nonexistent", nil).Frames(s.Chain, nil)
		}
	})
}

// TestKallsymsNames: naming many addresses in one pass (which stops early when all of them lie in the
// kernel image) agrees with a lookup in every symbol, sorted, for addresses in the image only and for
// addresses in modules too, on the fixture and on this machine's kallsyms.
func TestKallsymsNames(t *testing.T) {
	t.Parallel()
	files := map[string][]byte{"fixture": readFixture(t, "kallsyms")}
	if b, err := os.ReadFile("/proc/kallsyms"); err == nil {
		if _, n, err := parseKallsyms(b); err == nil && n > 0 {
			files["/proc/kallsyms"] = b
		}
	}
	for name, b := range files {
		type sym struct {
			addr         uint64
			name, module string
		}
		var all []sym
		if err := scanKallsyms(bytes.NewReader(b), func(addr uint64, rest []byte) bool {
			n, m := splitName(rest)
			all = append(all, sym{addr, string(n), string(m)})
			return true
		}); err != nil {
			t.Fatal(err)
		}
		sort.SliceStable(all, func(i, j int) bool { return all[i].addr < all[j].addr })
		want := func(a uint64) kname {
			i := sort.Search(len(all), func(i int) bool { return all[i].addr > a })
			if i == 0 {
				return kname{}
			}
			return kname{all[i-1].name, all[i-1].module}
		}
		k, _, err := parseKallsyms(b)
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(3, 4))
		var image, every []uint64
		for range 2000 {
			s := all[rng.IntN(len(all))]
			a := s.addr + rng.Uint64N(64)
			every = append(every, a)
			if s.module == "" {
				image = append(image, a)
			}
		}
		for _, addrs := range [][]uint64{image, every, {all[0].addr - 1}} {
			slices.Sort(addrs)
			addrs = slices.Compact(addrs)
			got, err := k.names(addrs)
			if err != nil {
				t.Fatal(err)
			}
			for i, a := range addrs {
				if w := want(a); got[i] != w {
					t.Errorf("%s: %#x named %+v, want %+v", name, a, got[i], w)
				}
			}
		}
	}
}

// TestKallsymsCache: the first naming reads /proc/kallsyms and writes the image's symbols for this boot,
// owner-only; the next names from the cache alike, and an address outside the image (below its first
// symbol) is still named from /proc/kallsyms.
func TestKallsymsCache(t *testing.T) {
	t.Parallel()
	k, err := ReadKallsyms("/proc")
	if err != nil {
		t.Skipf("%v", err)
	}
	dir := t.TempDir()
	k.UseCache(dir)
	if k.cache == "" {
		t.Skip("no boot id")
	}
	b, err := os.ReadFile("/proc/kallsyms")
	if err != nil {
		t.Fatal(err)
	}
	var addrs []uint64 // within the image's symbols, spread over them
	n := 0
	if err := scanKallsyms(bytes.NewReader(b), func(addr uint64, rest []byte) bool {
		if n++; n%97 == 0 && !bytes.Contains(rest, []byte("[")) {
			addrs = append(addrs, addr+uint64(n%13))
		}
		return true
	}); err != nil {
		t.Fatal(err)
	}
	slices.Sort(addrs)
	addrs = slices.Compact(addrs)
	first, err := k.names(addrs)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(k.cache)
	if err != nil {
		t.Fatalf("no cache written: %v", err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("cache mode %v, want 0600", st.Mode().Perm())
	}
	cached, ok := k.namesCached(addrs)
	if !ok {
		t.Fatal("addresses in the image not named from the cache")
	}
	if d := cmp.Diff(first, cached, cmp.AllowUnexported(kname{})); d != "" {
		t.Errorf("cache names differ from /proc/kallsyms (-file +cache):\n%s", d)
	}
	if _, ok := k.namesCached([]uint64{0x1000}); ok {
		t.Error("an address outside the image was named from the cache")
	}
}
