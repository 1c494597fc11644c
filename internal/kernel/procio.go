package kernel

import (
	"bytes"
	"fmt"
	"strconv"
)

// The readers below replace procfs's for files tare reads for every process: procfs parses them with
// fmt.Sscanf, which costs more than reading the file.

// parseIO returns read_bytes and write_bytes from /proc/PID/io (bytes that reached the storage layer).
func parseIO(b []byte) (read, write uint64, err error) {
	var seen [2]bool
	for len(b) > 0 { // line by line, without a scanner's buffer: read at every detail sample of every process
		var line []byte
		line, b, _ = bytes.Cut(b, []byte{'\n'})
		k, v, ok := bytes.Cut(line, []byte(": "))
		if !ok {
			continue
		}
		switch string(k) {
		case "read_bytes":
			read, err = strconv.ParseUint(string(bytes.TrimSpace(v)), 10, 64)
			seen[0] = true
		case "write_bytes":
			write, err = strconv.ParseUint(string(bytes.TrimSpace(v)), 10, 64)
			seen[1] = true
		}
		if err != nil {
			return 0, 0, fmt.Errorf("io: %w", err)
		}
	}
	if !seen[0] || !seen[1] {
		return 0, 0, fmt.Errorf("io: read_bytes or write_bytes missing")
	}
	return read, write, nil
}

// cgroupOf returns the cgroup path that identifies a process's pod, from /proc/PID/cgroup ("ID:controllers:path"
// per line; the path may contain ':'): any path naming kubepods, else the v1 path of the cpu controller,
// else the unified (v2) path. Any malformed line is an error. Read for every process tare sees, so it
// walks the file without splitting it (the tests hold the plain parser it must agree with).
func cgroupOf(b []byte) (string, error) {
	var best, kube []byte
	rest := bytes.TrimSpace(b)
	for len(rest) > 0 {
		var line []byte
		line, rest, _ = bytes.Cut(rest, []byte{'\n'})
		if len(line) == 0 {
			continue
		}
		idField, after, ok := bytes.Cut(line, []byte{':'})
		ctl, path, ok2 := bytes.Cut(after, []byte{':'})
		if !ok || !ok2 {
			return "", fmt.Errorf("cgroup line %q: want ID:controllers:path", line)
		}
		id, err := cgroupID(idField)
		if err != nil {
			return "", fmt.Errorf("cgroup line %q: %w", line, err)
		}
		if kube != nil {
			continue // chosen: the rest is only checked
		}
		if bytes.Contains(path, []byte("kubepods")) {
			kube = path
			continue
		}
		if id == 0 && len(best) == 0 {
			best = path
		}
		for c := range bytes.SplitSeq(ctl, []byte{','}) {
			if string(c) == "cpu" || string(c) == "cpuacct" {
				best = path
			}
		}
	}
	if kube != nil {
		return string(kube), nil
	}
	return string(best), nil
}

// cgroupID parses a hierarchy ID as strconv.Atoi does, without converting the common case to a string.
func cgroupID(b []byte) (int, error) {
	if len(b) == 0 || len(b) > 9 {
		return strconv.Atoi(string(b))
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return strconv.Atoi(string(b))
		}
		n = n*10 + int(c-'0')
	}
	return n, nil
}
