package images

import (
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// The shared libraries a dynamically linked program loads, found as the dynamic loader finds them, so that
// an image can hold the program with everything it needs and nothing else (tools.go). The loader of an
// image has no ld.so.cache: it finds a library through the RUNPATH (or RPATH) of the object that needs it,
// then in its default directories, so each file is stored under the path that search reaches.

// loadedFile is a file the loader opens: Path is where it looks for it (the path inside an image), Host
// the file that is there on this machine, symbolic links followed.
type loadedFile struct {
	Path string
	Host string
}

// errLibraryNotFound says a program needs a library the search does not find.
var errLibraryNotFound = errors.New("shared library not found")

// libSearch finds the libraries of programs built for one machine type.
type libSearch struct {
	class   elf.Class
	machine elf.Machine
	dirs    []string // the loader's default directories, in its order
}

// multiarch are Debian's multiarch triplets of the machine types tare runs on.
var multiarch = map[elf.Machine]string{elf.EM_X86_64: "x86_64-linux-gnu", elf.EM_AARCH64: "aarch64-linux-gnu"}

// defaultLibDirs are the directories a Debian loader searches when a library is found through no RUNPATH
// (its ld.so.cache lists the same directories, from /etc/ld.so.conf.d).
func defaultLibDirs(m elf.Machine) []string {
	var dirs []string
	if t, ok := multiarch[m]; ok {
		dirs = append(dirs, "/lib/"+t, "/usr/lib/"+t)
	}
	return append(dirs, "/lib64", "/usr/lib64", "/lib", "/usr/lib")
}

// elfObject is what the walk needs of one loaded object.
type elfObject struct {
	loadedFile
	needed []string
	// runpath holds DT_RUNPATH's directories (searched for this object's own needs) or, when it has none,
	// DT_RPATH's (also searched for the needs of what it loads); $ORIGIN expanded.
	runpath []string
	rpath   bool
}

// sharedLibraries returns the programs (absolute paths) and every file the loader opens to run them: their
// interpreter (PT_INTERP) and the libraries of DT_NEEDED, recursively, each once. Programs must be dynamic
// executables of one machine type; a library that cannot be found is an error matching
// errLibraryNotFound that names who needs it.
func sharedLibraries(programs ...string) ([]loadedFile, error) {
	var out []loadedFile
	var s *libSearch
	found := map[string]bool{}       // needed names resolved (the loader loads a name once)
	stored := map[string]bool{}      // paths already in out
	parents := map[string][]string{} // an object's path → the RPATHs inherited from what loaded it
	var queue []elfObject
	add := func(o elfObject) {
		if !stored[o.Path] {
			stored[o.Path] = true
			out = append(out, o.loadedFile)
			queue = append(queue, o)
		}
	}
	for _, prog := range programs {
		o, f, err := openObject(prog)
		if err != nil {
			return nil, err
		}
		interp, err := interpreter(f)
		_ = f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", prog, err)
		}
		if s == nil {
			s = &libSearch{class: f.Class, machine: f.Machine, dirs: defaultLibDirs(f.Machine)}
		} else if f.Class != s.class || f.Machine != s.machine {
			return nil, fmt.Errorf("%s is built for %v, not %v like %s", prog, f.Machine, s.machine, programs[0])
		}
		add(o)
		if interp == "" || stored[interp] {
			continue
		}
		lo, lf, err := openObject(interp)
		if err != nil {
			return nil, fmt.Errorf("the loader of %s: %w", prog, err)
		}
		soname, _ := lf.DynString(elf.DT_SONAME)
		_ = lf.Close()
		found[filepath.Base(interp)] = true // libc names the loader as a DT_NEEDED: it is the one loaded
		for _, n := range soname {
			found[n] = true
		}
		add(lo)
	}
	for len(queue) > 0 {
		o := queue[0]
		queue = queue[1:]
		dirs := o.runpath
		if o.rpath || len(o.runpath) == 0 {
			dirs = append(dirs[:len(dirs):len(dirs)], parents[o.Path]...)
		}
		for _, name := range o.needed {
			if found[name] {
				continue
			}
			lib, err := s.find(name, dirs)
			if err != nil {
				return nil, fmt.Errorf("%s needs %s: %w", o.Path, name, err)
			}
			found[name] = true
			if o.rpath || len(o.runpath) == 0 { // DT_RPATH applies to the whole tree below, DT_RUNPATH does not
				parents[lib.Path] = dirs
			}
			add(lib)
		}
	}
	return out, nil
}

// find looks for a needed library as the loader does: a name with a slash is a path; otherwise the dirs of
// the needing object, then the default directories, skipping files built for another machine type.
func (s *libSearch) find(name string, dirs []string) (elfObject, error) {
	if strings.Contains(name, "/") {
		o, f, err := openObject(name)
		if err != nil {
			return elfObject{}, err
		}
		_ = f.Close()
		return o, nil
	}
	var tried []string
	for _, d := range append(dirs[:len(dirs):len(dirs)], s.dirs...) {
		path := filepath.Join(d, name)
		tried = append(tried, d)
		o, f, err := openObject(path)
		if err != nil {
			continue
		}
		ok := f.Class == s.class && f.Machine == s.machine
		_ = f.Close()
		if ok {
			return o, nil
		}
	}
	return elfObject{}, fmt.Errorf("%w in %s", errLibraryNotFound, strings.Join(tried, ", "))
}

// openObject opens the ELF object the loader finds at path and reads its needs; the caller closes the file.
func openObject(path string) (elfObject, *elf.File, error) {
	host, err := filepath.EvalSymlinks(path)
	if err != nil {
		return elfObject{}, nil, err
	}
	f, err := elf.Open(host)
	if err != nil {
		return elfObject{}, nil, fmt.Errorf("reading %s: %w", path, err)
	}
	o := elfObject{loadedFile: loadedFile{Path: filepath.Clean(path), Host: host}}
	if o.needed, err = f.ImportedLibraries(); err != nil {
		_ = f.Close()
		return elfObject{}, nil, fmt.Errorf("reading the libraries %s needs: %w", path, err)
	}
	runpath, _ := f.DynString(elf.DT_RUNPATH)
	if len(runpath) == 0 {
		runpath, _ = f.DynString(elf.DT_RPATH)
		o.rpath = len(runpath) > 0
	}
	o.runpath = searchDirs(runpath, filepath.Dir(o.Path))
	return o, f, nil
}

// searchDirs splits DT_RUNPATH or DT_RPATH strings into directories, with $ORIGIN (the needing object's
// directory) expanded; a directory naming another dynamic string token ($LIB, $PLATFORM) is left out.
func searchDirs(values []string, origin string) []string {
	var dirs []string
	for _, v := range values {
		for _, d := range strings.Split(v, ":") {
			d = strings.NewReplacer("${ORIGIN}", origin, "$ORIGIN", origin).Replace(d)
			if d != "" && !strings.Contains(d, "$") {
				dirs = append(dirs, filepath.Clean(d))
			}
		}
	}
	return dirs
}

// interpreter is the program's dynamic loader (PT_INTERP), or "" for a static program.
func interpreter(f *elf.File) (string, error) {
	for _, p := range f.Progs {
		if p.Type != elf.PT_INTERP {
			continue
		}
		b := make([]byte, p.Filesz)
		if _, err := p.ReadAt(b, 0); err != nil {
			return "", fmt.Errorf("reading its loader's path: %w", err)
		}
		return string(bytes.TrimRight(b, "\x00")), nil
	}
	return "", nil
}
