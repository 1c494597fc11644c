package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
)

// progStats is one BPF program's counters from a file descriptor's fdinfo: run time and runs are counted
// only while the kernel's BPF statistics are enabled.
type progStats struct {
	id     uint64
	runNs  uint64
	runCnt uint64
}

// bpfPrograms returns the BPF programs process pid holds file descriptors of, each once.
func bpfPrograms(pid int) (map[uint64]progStats, error) {
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("listing the tracer's file descriptors: %w", err)
	}
	progs := map[uint64]progStats{}
	for _, e := range ents {
		target, err := os.Readlink(dir + "/" + e.Name())
		if err != nil || target != "anon_inode:bpf-prog" {
			continue // closed since the listing, or not a program
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/fdinfo/%s", pid, e.Name()))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading a BPF program's fdinfo: %w", err)
		}
		p, err := parseProgFdinfo(b)
		if err != nil {
			return nil, err
		}
		progs[p.id] = p
	}
	return progs, nil
}

// bpfRunTime is the run time (ns) and runs of every BPF program process pid holds.
func bpfRunTime(pid int) (ns, runs uint64, err error) {
	progs, err := bpfPrograms(pid)
	if err != nil {
		return 0, 0, err
	}
	for _, p := range progs {
		ns, runs = ns+p.runNs, runs+p.runCnt
	}
	return ns, runs, nil
}

// parseProgFdinfo reads prog_id, run_time_ns and run_cnt from a BPF program's fdinfo.
func parseProgFdinfo(b []byte) (progStats, error) {
	var p progStats
	seen := false
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		var dst *uint64
		switch k {
		case "prog_id":
			dst, seen = &p.id, true
		case "run_time_ns":
			dst = &p.runNs
		case "run_cnt":
			dst = &p.runCnt
		default:
			continue
		}
		n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return progStats{}, fmt.Errorf("malformed BPF program fdinfo: %s: %w", k, err)
		}
		*dst = n
	}
	if !seen {
		return progStats{}, errors.New("malformed BPF program fdinfo: no prog_id")
	}
	return p, sc.Err()
}
