package sample

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

// procStat is the part of /proc/PID/stat tare uses. procfs parses the file with fmt.Sscan, which costs
// more than the read itself; tare reads stat for every new process and, without root, every sample.
type procStat struct {
	Comm       string
	State      byte // R, S, D, Z (zombie: ended, not yet reaped), ...
	PPID       int
	Flags      uint64
	UTime      uint64 // clock ticks
	STime      uint64
	CUTime     int64
	CSTime     int64
	NumThreads int
	Starttime  uint64 // clock ticks since boot
}

// parseProcStat decodes /proc/PID/stat. The comm field is found between the first '(' and the last ')'
// because it may hold spaces and parentheses.
func parseProcStat(b []byte) (procStat, error) {
	open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || end < open {
		return procStat{}, fmt.Errorf("stat: no (comm)")
	}
	f := strings.Fields(string(b[end+1:]))
	if len(f) < 20 {
		return procStat{}, fmt.Errorf("stat: %d fields after comm, want at least 20", len(f))
	}
	var s procStat
	s.Comm = string(b[open+1 : end])
	if len(f[0]) == 1 {
		s.State = f[0][0]
	}
	var errs [8]error
	s.PPID, errs[0] = strconv.Atoi(f[1])
	s.Flags, errs[1] = strconv.ParseUint(f[6], 10, 64)
	s.UTime, errs[2] = strconv.ParseUint(f[11], 10, 64)
	s.STime, errs[3] = strconv.ParseUint(f[12], 10, 64)
	s.CUTime, errs[4] = strconv.ParseInt(f[13], 10, 64)
	s.CSTime, errs[5] = strconv.ParseInt(f[14], 10, 64)
	s.NumThreads, errs[6] = strconv.Atoi(f[17])
	s.Starttime, errs[7] = strconv.ParseUint(f[19], 10, 64)
	for _, err := range errs {
		if err != nil {
			return procStat{}, fmt.Errorf("stat: %w", err)
		}
	}
	return s, nil
}

func readProcStat(procRoot string, pid int) (procStat, error) {
	b, err := readBounded(filepath.Join(procRoot, strconv.Itoa(pid), "stat"))
	if err != nil {
		return procStat{}, gone(pid, err)
	}
	s, err := parseProcStat(b)
	if err != nil {
		return procStat{}, fmt.Errorf("process %d: %w", pid, err)
	}
	return s, nil
}

// ownTimeNs is utime+stime in nanoseconds.
func (s procStat) ownTimeNs() uint64 {
	return (s.UTime + s.STime) * (1e9 / userHZ)
}

// childTimeNs is cutime+cstime in nanoseconds.
func (s procStat) childTimeNs() uint64 {
	return uint64(s.CUTime+s.CSTime) * (1e9 / userHZ)
}
