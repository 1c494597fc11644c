package kernel

import (
	"bytes"
	"math"
	"testing"
)

// Fuzz targets of the node-wide parsers: /proc/stat, /proc/loadavg, /proc/pressure/*, the root cgroup's CPU
// usage and the kernel's build configuration, seeded with files captured from a real machine.

func FuzzParseProcStatCPU(f *testing.F) {
	seedFiles(f, "root/proc/stat")
	f.Add([]byte("cpu  1 2 3 4 5 6 7 8\nprocs_running 3\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, running, err := parseProcStatCPU(b)
		if err != nil {
			return
		}
		for _, v := range []float64{c.User, c.Nice, c.System, c.Idle, c.Iowait, c.IRQ, c.SoftIRQ, c.Steal, c.Guest, c.GuestNice} {
			if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
				t.Fatalf("cpu seconds %v in %+v", v, c)
			}
		}
		if running < 0 {
			t.Fatalf("procs_running %d", running)
		}
	})
}

func FuzzParseLoadavg(f *testing.F) {
	seedFiles(f, "root/proc/loadavg")
	f.Fuzz(func(t *testing.T, b []byte) {
		l1, l5, l15, err := parseLoadavg(b)
		if err == nil && len(bytes.Fields(b)) < 3 {
			t.Fatalf("parsed %v %v %v from fewer than three fields", l1, l5, l15)
		}
	})
}

func FuzzParsePressure(f *testing.F) {
	seedFiles(f, "root/proc/pressure/*")
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := parsePressure(b)
		if err == nil && !bytes.Contains(b, []byte("some ")) {
			t.Fatalf("%+v without a some line", p)
		}
	})
}

func FuzzParseCgroupUsage(f *testing.F) {
	seedFiles(f, "root/sys/fs/cgroup/cpuacct/cpuacct.usage", "seeds/cpuacct.usage", "seeds/cgroup2_*cpu.stat")
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, name := range []string{"cpuacct.usage", "cpu.stat"} {
			ns, err := ParseCgroupUsage(name, b)
			if err != nil {
				continue
			}
			if name == "cpu.stat" && ns%1000 != 0 {
				t.Fatalf("%s: %d ns is not a whole number of microseconds (the µs figure overflowed)", name, ns)
			}
		}
	})
}

func FuzzParseKernelHZ(f *testing.F) {
	seedFiles(f, "seeds/config")
	f.Fuzz(func(t *testing.T, b []byte) {
		_ = parseKernelHZ(b)
	})
}
