package profile

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/tare-dev/tare/internal/kernel"
)

// Mapping is one executable mapping of a process's memory (a line of /proc/PID/maps with x permission).
type Mapping struct {
	Start, End uint64 // virtual addresses, End exclusive
	Offset     uint64 // file offset of Start
	Dev        string // major:minor of the file's device
	Inode      uint64
	Path       string // the file, or a pseudo name ([vdso]), or "" for anonymous memory (JIT code)
}

// ReadMaps reads the executable mappings of a process from procRoot/PID/maps. The read takes the process's
// memory-map lock and can block behind it (the classic ps hang), so it goes through the shared blocking
// reader: ordinary system calls with a deadline, after which the process's frames are [unknown] and the
// profile goes on.
func ReadMaps(procRoot string, pid int) ([]Mapping, error) {
	b, err := kernel.BlockingReads(procRoot).Read(pid, "", "maps")
	if err != nil {
		return nil, fmt.Errorf("reading the memory map of process %d: %w", pid, err)
	}
	// The reader returns at most 1 MiB: a longer map (tens of thousands of mappings) is cut, so keep its
	// whole lines.
	if i := strings.LastIndexByte(string(b), '\n'); i >= 0 && i < len(b)-1 {
		b = b[:i+1]
	}
	return parseMaps(b)
}

// parseMaps parses /proc/PID/maps, keeping executable mappings in address order.
func parseMaps(b []byte) ([]Mapping, error) {
	var out []Mapping
	for n, line := range strings.Split(string(b), "\n") {
		if line == "" {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 5 {
			return nil, fmt.Errorf("maps line %d %q: %w", n+1, line, ErrMalformed)
		}
		lo, hi, ok := strings.Cut(f[0], "-")
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		off, err3 := strconv.ParseUint(f[2], 16, 64)
		inode, err4 := strconv.ParseUint(f[4], 10, 64)
		if !ok || err1 != nil || err2 != nil || err3 != nil || err4 != nil || end < start || len(f[1]) < 3 {
			return nil, fmt.Errorf("maps line %d %q: %w", n+1, line, ErrMalformed)
		}
		if f[1][2] != 'x' {
			continue
		}
		m := Mapping{Start: start, End: end, Offset: off, Dev: f[3], Inode: inode}
		if len(f) > 5 {
			// The path is the rest of the line after the inode; it may hold spaces.
			m.Path = strings.Join(f[5:], " ")
		}
		out = append(out, m)
	}
	return out, nil
}

// find returns the mapping holding addr.
func find(maps []Mapping, addr uint64) (Mapping, bool) {
	for _, m := range maps {
		if addr >= m.Start && addr < m.End {
			return m, true
		}
	}
	return Mapping{}, false
}
