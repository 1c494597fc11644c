package diskpath

import (
	"slices"
	"strconv"
	"strings"
	"testing"
)

// FuzzParseBlockSizes feeds --bs, seeded with docs/guides/datapath.md's values: every block size accepted is
// a whole number of 512-byte sectors, at most 64 MiB.
func FuzzParseBlockSizes(f *testing.F) {
	for _, s := range []string{"4k,64k", "1m", "0", "1g", "-1k", "16K, 1M", "512,1000"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		bs, err := ParseBlockSizes(s)
		if err != nil {
			checkError(t, err)
			return
		}
		for _, n := range bs {
			if n%512 != 0 || n > 64<<20 {
				t.Fatalf("block size %d accepted", n)
			}
		}
	})
}

// FuzzParseFileSize feeds --size, seeded with docs/guides/datapath.md's values: an accepted size is a whole number
// of MiB from 1 MiB to 1 TiB, and reading the same text twice gives the same answer.
func FuzzParseFileSize(f *testing.F) {
	for _, s := range []string{"256m", "1g", "1024k", "1", "1mg", "1gm", "1099511627776", "2048K"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseFileSize(s)
		for range 4 { // the suffixes must not depend on map order
			m, err2 := ParseFileSize(s)
			if m != n || (err == nil) != (err2 == nil) {
				t.Fatalf("%q read as %d (%v), then %d (%v)", s, n, err, m, err2)
			}
		}
		if err != nil {
			checkError(t, err)
			return
		}
		if n < 1<<20 || n > 1<<40 || n%(1<<20) != 0 {
			t.Fatalf("%q accepted as %d bytes", s, n)
		}
		if m, err := ParseFileSize(strconv.FormatInt(n>>20, 10) + "m"); err != nil || m != n {
			t.Fatalf("%q is %d bytes, but %dm reads as %d (%v)", s, n, n>>20, m, err)
		}
	})
}

// FuzzParseNames feeds --targets, --rw and --iodepth, seeded with docs/guides/datapath.md's values:
// whatever is accepted is a known name (or depth), and a target given twice is numbered as such.
func FuzzParseNames(f *testing.F) {
	for _, s := range []string{"host,pod-same-node,vxlan,clusterip", "tcp-stream,tcp-rr,tcp-crr", "host,host,pod-cross-node,vxlan",
		"host,rootfs,emptydir,hostpath,pvc", "randread,randwrite", "1,32", "host,,host", "1024,0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if lanes, err := ParseTargets(s); err == nil {
			for _, l := range lanes {
				if !slices.Contains(Targets, l.Target) || l.Copy < 1 {
					t.Fatalf("%q: lane %+v", s, l)
				}
			}
		}
		if rws, err := ParseRWs(s); err == nil {
			for _, rw := range rws {
				if !slices.Contains(RWs, rw) {
					t.Fatalf("%q: pattern %q", s, rw)
				}
			}
		}
		if ds, err := ParseDepths(s); err == nil {
			for _, d := range ds {
				if d < 1 || d > 1024 {
					t.Fatalf("%q: depth %d", s, d)
				}
			}
		} else {
			checkError(t, err)
		}
	})
}

// checkError fails unless err says something, starting lower case (or with an acronym: MTU).
func checkError(t *testing.T, err error) {
	t.Helper()
	msg := err.Error()
	words := strings.Fields(msg)
	if len(words) == 0 || strings.ToLower(msg[:1]) != msg[:1] && words[0] != strings.ToUpper(words[0]) {
		t.Fatalf("error %q is empty or does not start lower case", msg)
	}
}
