package kernel

import (
	"bytes"
	"testing"
)

// FuzzParseTIDList fuzzes the parser of cgroup.threads and cgroup.procs.
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
