package kernel

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The fuzz targets of the per-process parsers tare owns (stat, schedstat, io, cgroup, cpu lists). Each is
// seeded with the files captured from a real machine under testdata/ and checks, besides not panicking,
// that what a parser returns agrees with the input. Run one with
// go test ./internal/kernel -run '^$' -fuzz FuzzParseProcStat -fuzztime 30s; `make fuzz` runs them all briefly.

// seedFiles adds every file matching the glob patterns under testdata/ to the corpus.
func seedFiles(f *testing.F, patterns ...string) {
	f.Helper()
	n := 0
	for _, p := range patterns {
		paths, err := filepath.Glob(filepath.Join("testdata", p))
		if err != nil {
			f.Fatal(err)
		}
		for _, path := range paths {
			b, err := os.ReadFile(path)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
			n++
		}
	}
	if n == 0 {
		f.Fatalf("no fixtures match %v", patterns)
	}
}

func FuzzParseProcStat(f *testing.F) {
	seedFiles(f, "root/proc/*/stat", "root/proc/*/task/*/stat")
	f.Add([]byte("1 (a) b) c) S 0 1 1 0 -1 4194560 1 0 0 0 1 2 -3 -4 20 0 1 0 5 6 7"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ParseProcStat(b)
		// The plain parser (strings.Fields), whose white space is Unicode's: the kernel prints ASCII.
		if end := bytes.LastIndexByte(b, ')'); end >= 0 && isASCII(b[end+1:]) {
			if want, werr := plainParseProcStat(b); (err == nil) != (werr == nil) || s != want {
				t.Fatalf("ParseProcStat = %+v, %v; the plain parser says %+v, %v", s, err, want, werr)
			}
		}
		if err != nil {
			return
		}
		open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
		if s.Comm != string(b[open+1:end]) {
			t.Fatalf("comm %q, want the text between the first ( and the last )", s.Comm)
		}
		// utime is field 14 of the line, the 12th after comm and state.
		if want, _ := strconv.ParseUint(strings.Fields(string(b[end+1:]))[11], 10, 64); s.UTime != want {
			t.Fatalf("utime %d, want %d", s.UTime, want)
		}
		_ = s.ChildTimeNs()
	})
}

func FuzzParseSchedstatRuntime(f *testing.F) {
	seedFiles(f, "root/proc/*/schedstat", "root/proc/*/task/*/schedstat")
	f.Add([]byte("18446744073709551615 0 0\n"))
	f.Add([]byte("18446744073709551616 0 0\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := parseSchedstatRuntime(b)
		field := b
		if i := bytes.IndexByte(b, ' '); i > 0 {
			field = b[:i]
		}
		want, werr := strconv.ParseUint(string(field), 10, 64)
		if (err == nil) != (werr == nil) || err == nil && v != want {
			t.Fatalf("parseSchedstatRuntime(%q) = %d, %v; strconv says %d, %v", b, v, err, want, werr)
		}
	})
}

func FuzzParseIO(f *testing.F) {
	seedFiles(f, "root/proc/*/io")
	f.Fuzz(func(t *testing.T, b []byte) {
		r, w, err := parseIO(b)
		if err != nil && (r != 0 || w != 0) {
			t.Fatalf("error %v with values %d, %d", err, r, w)
		}
		if err == nil && !bytes.Contains(b, []byte("read_bytes: ")) {
			t.Fatalf("no read_bytes line, yet %d read", r)
		}
	})
}

func FuzzParseCgroupFile(f *testing.F) {
	seedFiles(f, "root/proc/*/cgroup")
	f.Add([]byte("0::/kubepods.slice/kubepods-burstable.slice/cri-containerd-abc.scope\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		cgs, err := parseCgroupFile(b)
		got, err2 := cgroupOf(b)
		if (err == nil) != (err2 == nil) {
			t.Fatalf("the plain parser says %v, cgroupOf %v", err, err2)
		}
		if err != nil {
			return
		}
		if want := pickCgroup(cgs); got != want {
			t.Fatalf("cgroupOf chose %q, the plain parser %q", got, want)
		}
		paths := map[string]bool{"": true}
		for _, c := range cgs {
			if strings.Contains(c.path, "\n") {
				t.Fatalf("path %q spans lines", c.path)
			}
			paths[c.path] = true
		}
		if p := pickCgroup(cgs); !paths[p] {
			t.Fatalf("pickCgroup chose %q, which is none of the file's paths", p)
		}
	})
}

func FuzzParseCPUList(f *testing.F) {
	seedFiles(f, "root/sys/devices/system/cpu/*")
	// Reversed and overflowing ranges, which once counted negative or wrapped.
	for _, s := range []string{"0-3,8,10-11", "3-1", "0-9223372036854775807", "0-9223372036854775806,0-9223372036854775806", "-1"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := ParseCPUList(string(b))
		if err != nil {
			return
		}
		if n < 0 || n > maxCPUs {
			t.Fatalf("ParseCPUList(%q) = %d CPUs, want 0 to %d", b, n, maxCPUs)
		}
	})
}

func FuzzParseVMStat(f *testing.F) {
	seedFiles(f, "root/proc/vmstat")
	f.Fuzz(func(t *testing.T, b []byte) {
		v := parseVMStat(b)
		if v.OOMKill != 0 && !bytes.Contains(b, []byte("oom_kill ")) {
			t.Fatalf("oom_kill %d without an oom_kill line", v.OOMKill)
		}
	})
}

func FuzzParseLinkMTU(f *testing.F) {
	seedFiles(f, "root/sys/class/net/*/mtu")
	f.Fuzz(func(t *testing.T, b []byte) {
		if n, err := ParseLinkMTU(b); err == nil && n < 0 {
			t.Fatalf("ParseLinkMTU(%q) = %d, a negative MTU", b, n)
		}
	})
}

func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 {
			return false
		}
	}
	return true
}

// plainParseProcStat is ParseProcStat as first written, with strings.Fields: the oracle of the fuzz target.
func plainParseProcStat(b []byte) (ProcStat, error) {
	open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || end < open {
		return ProcStat{}, fmt.Errorf("stat: no (comm)")
	}
	f := strings.Fields(string(b[end+1:]))
	if len(f) < 20 {
		return ProcStat{}, fmt.Errorf("stat: %d fields after comm, want at least 20", len(f))
	}
	var s ProcStat
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
			return ProcStat{}, fmt.Errorf("stat: %w", err)
		}
	}
	return s, nil
}
