package images

import (
	"debug/elf"
	"errors"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tare-dev/tare/internal/testenv"
)

// TestSharedLibrariesIperf3 walks the real /usr/bin/iperf3: the program first, its loader (PT_INTERP) at
// the path the program names, every DT_NEEDED of every file found once under its own name, each a file of
// the machine built for the same machine type, and the same libraries as the real loader's `ldd` lists.
func TestSharedLibrariesIperf3(t *testing.T) {
	t.Parallel()
	const prog = "/usr/bin/iperf3"
	f, err := elf.Open(prog)
	if err != nil {
		testenv.Unavailable(t, "iperf3 is not installed (%s): %v", installToolsHint, err)
	}
	interp, err := interpreter(f)
	machine := f.Machine
	_ = f.Close()
	if err != nil || interp == "" {
		t.Fatalf("%s: loader %q, %v", prog, interp, err)
	}
	files, err := sharedLibraries(prog)
	if err != nil {
		t.Fatal(err)
	}
	if files[0] != (loadedFile{Path: prog, Host: prog}) {
		t.Errorf("first file %+v, want the program itself", files[0])
	}
	byName := map[string]loadedFile{}
	for _, lf := range files {
		if _, ok := byName[filepath.Base(lf.Path)]; ok {
			t.Errorf("%s found twice", filepath.Base(lf.Path))
		}
		byName[filepath.Base(lf.Path)] = lf
	}
	if lf, ok := byName[filepath.Base(interp)]; !ok || lf.Path != interp {
		t.Errorf("the loader %s is not among %v", interp, files)
	}
	for _, lf := range files {
		o, err := elf.Open(lf.Host)
		if err != nil {
			t.Fatalf("%s (%s): %v", lf.Path, lf.Host, err)
		}
		needed, err := o.ImportedLibraries()
		if o.Machine != machine {
			t.Errorf("%s is built for %v, the program for %v", lf.Host, o.Machine, machine)
		}
		_ = o.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range needed {
			if _, ok := byName[n]; !ok {
				t.Errorf("%s needs %s, not found", lf.Path, n)
			}
		}
	}
	if _, err := exec.LookPath("ldd"); err != nil {
		return
	}
	out, err := exec.Command("ldd", prog).Output()
	if err != nil {
		t.Fatalf("ldd %s: %v", prog, err)
	}
	var want []string
	for _, line := range strings.Split(string(out), "\n") {
		// "libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x…)", "/lib64/ld-linux-x86-64.so.2 (0x…)"
		if name, _, _ := strings.Cut(strings.TrimSpace(line), " "); name != "" && !strings.HasPrefix(name, "linux-vdso") {
			want = append(want, filepath.Base(name))
		}
	}
	var got []string
	for _, lf := range files[1:] {
		got = append(got, filepath.Base(lf.Path))
	}
	slices.Sort(want)
	slices.Sort(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("libraries of %s (-ldd +sharedLibraries):\n%s", prog, diff)
	}
}

// TestSharedLibrariesNotFound: a library in none of the directories is an error that says so.
func TestSharedLibrariesNotFound(t *testing.T) {
	t.Parallel()
	s := libSearch{class: elf.ELFCLASS64, machine: elf.EM_X86_64, dirs: defaultLibDirs(elf.EM_X86_64)}
	_, err := s.find("libtare-does-not-exist.so.1", []string{t.TempDir()})
	if !errors.Is(err, errLibraryNotFound) || !strings.Contains(err.Error(), "/usr/lib/x86_64-linux-gnu") {
		t.Errorf("find of a missing library: %v", err)
	}
	if _, err := sharedLibraries("/tare/no/such/program"); err == nil {
		t.Error("a missing program was walked")
	}
}

func TestSearchDirs(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		values []string
		want   []string
	}{
		{nil, nil},
		{[]string{"/usr/lib/x86_64-linux-gnu/ceph"}, []string{"/usr/lib/x86_64-linux-gnu/ceph"}},
		{[]string{"$ORIGIN/../lib:/opt/x/lib/"}, []string{"/usr/lib", "/opt/x/lib"}},
		{[]string{"${ORIGIN}", "::/a"}, []string{"/usr/bin", "/a"}},
		{[]string{"/usr/$LIB/x:/b"}, []string{"/b"}}, // tokens the image's loader would expand its own way
	} {
		if got := searchDirs(c.values, "/usr/bin"); !slices.Equal(got, c.want) {
			t.Errorf("searchDirs(%q) = %q, want %q", c.values, got, c.want)
		}
	}
}
