package sample

import (
	"bytes"
	"testing"
)

// Fuzz targets of the parsers behind the node-busy reference: cgroup.threads and the kernel's build
// configuration.

func FuzzParseTIDList(f *testing.F) {
	seedFiles(f, "v2host/sys/fs/cgroup/cgroup.threads", "v2host/sys/fs/cgroup/*/cgroup.threads")
	f.Add([]byte("1\n2\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		ids, err := parseTIDList(b)
		if err != nil {
			return
		}
		if len(ids) != len(bytes.Fields(b)) {
			t.Fatalf("%d IDs from %d lines", len(ids), len(bytes.Fields(b)))
		}
		for _, id := range ids {
			if id < 0 || id > 1<<31 {
				t.Fatalf("ID %d", id)
			}
		}
	})
}

func FuzzParseKernelConfig(f *testing.F) {
	seedFiles(f, "seeds/config", "hosts/bootconfig/boot/*")
	f.Fuzz(func(t *testing.T, b []byte) {
		kc := parseKernelConfig(b)
		if kc.HZ < 0 || kc.HZ > 100000 {
			t.Fatalf("HZ %d", kc.HZ)
		}
		if kc.HZ > 0 && !bytes.Contains(b, []byte("CONFIG_HZ=")) {
			t.Fatalf("HZ %d from a file without CONFIG_HZ", kc.HZ)
		}
		if kc.IRQTimeAccounting && !bytes.Contains(b, []byte("CONFIG_IRQ_TIME_ACCOUNTING=y")) {
			t.Fatal("IRQ time accounting from a file without CONFIG_IRQ_TIME_ACCOUNTING=y")
		}
	})
}
