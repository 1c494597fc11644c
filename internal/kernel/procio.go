package kernel

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// The readers below replace procfs's for files tare reads for every process: procfs parses them with
// fmt.Sscanf, which costs more than reading the file.

// parseIO returns read_bytes and write_bytes from /proc/PID/io (bytes that reached the storage layer).
func parseIO(b []byte) (read, write uint64, err error) {
	var seen [2]bool
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ": ")
		if !ok {
			continue
		}
		switch k {
		case "read_bytes":
			read, err = strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			seen[0] = true
		case "write_bytes":
			write, err = strconv.ParseUint(strings.TrimSpace(v), 10, 64)
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

// cgroupLine is one line of /proc/PID/cgroup: hierarchy ID, controllers and path.
type cgroupLine struct {
	hierarchy   int
	controllers []string
	path        string
}

// parseCgroupFile splits /proc/PID/cgroup ("ID:controllers:path" per line; the path may contain ':').
func parseCgroupFile(b []byte) ([]cgroupLine, error) {
	var out []cgroupLine
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if line == "" {
			continue
		}
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			return nil, fmt.Errorf("cgroup line %q: want ID:controllers:path", line)
		}
		id, err := strconv.Atoi(parts[0])
		if err != nil {
			return nil, fmt.Errorf("cgroup line %q: %w", line, err)
		}
		var ctl []string
		if parts[1] != "" {
			ctl = strings.Split(parts[1], ",")
		}
		out = append(out, cgroupLine{hierarchy: id, controllers: ctl, path: parts[2]})
	}
	return out, nil
}

// pickCgroup chooses the cgroup path that identifies a process's pod: any path naming kubepods, else the v1
// path of the cpu controller, else the unified (v2) path.
func pickCgroup(cgs []cgroupLine) string {
	best := ""
	for _, c := range cgs {
		if strings.Contains(c.path, "kubepods") {
			return c.path
		}
		if c.hierarchy == 0 && best == "" {
			best = c.path
		}
		for _, ctl := range c.controllers {
			if ctl == "cpu" || ctl == "cpuacct" {
				best = c.path
			}
		}
	}
	return best
}
