package kernel

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzResources feeds the USE view's reader (prometheus/procfs for meminfo, diskstats and net/dev; tare's
// own parser for vmstat) files under a temporary root, seeded with the files captured from a real machine.
// A malformed file may be reported as missing, never crash the sampler.
func FuzzResources(f *testing.F) {
	files := []string{"meminfo", "diskstats", "net/dev", "vmstat"}
	var seed [4][]byte
	for i, name := range files {
		b, err := os.ReadFile(filepath.Join(fixtureProc, name))
		if err != nil {
			f.Fatal(err)
		}
		seed[i] = b
	}
	f.Add(seed[0], seed[1], seed[2], seed[3])
	f.Fuzz(func(t *testing.T, meminfo, diskstats, netdev, vmstat []byte) {
		root := t.TempDir()
		proc, sys := filepath.Join(root, "proc"), filepath.Join(root, "sys")
		for i, b := range [][]byte{meminfo, diskstats, netdev, vmstat} {
			p := filepath.Join(proc, files[i])
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.MkdirAll(filepath.Join(sys, "block", "vda", "queue"), 0o755); err != nil {
			t.Fatal(err)
		}
		r, err := NewResourceReader(proc, sys)
		if err != nil {
			t.Fatal(err)
		}
		res, _ := r.Read()
		if res == nil {
			t.Fatal("Read returned no reading")
		}
		for _, d := range res.Disks {
			if d.Name != "vda" {
				t.Fatalf("disk %q is not a whole device under /sys/block", d.Name)
			}
		}
	})
}
