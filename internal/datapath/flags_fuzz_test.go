package datapath

import (
	"strconv"
	"strings"
	"testing"
)

// FuzzParseSizes feeds --sizes and --bs, seeded with the values of the examples of docs/guides/datapath.md. Every size
// accepted is positive and at most 1 GiB, given once; written back with FormatSize it reads the same.
func FuzzParseSizes(f *testing.F) {
	for _, s := range []string{"1k,16k", "64k", "64,1k,16k,128k", "4k,64k", "1m", "0", "1g", "-1k", "16K, 1M"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sizes, err := ParseSizes(s)
		if err != nil {
			checkError(t, err)
			return
		}
		seen := map[int]bool{}
		var back []string
		for _, n := range sizes {
			if n <= 0 || n > 1<<30 || seen[n] {
				t.Fatalf("%q: size %d (of %v)", s, n, sizes)
			}
			seen[n] = true
			back = append(back, FormatSize(n))
		}
		again, err := ParseSizes(strings.Join(back, ","))
		if err != nil || !equal(again, sizes) {
			t.Fatalf("%q read %v, written %v, read again %v (%v)", s, sizes, back, again, err)
		}
		if bs, err := ParseBlockSizes(s); err == nil {
			for _, n := range bs {
				if n%512 != 0 || n > 64<<20 {
					t.Fatalf("block size %d accepted", n)
				}
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

// FuzzParseMTUs feeds --mtu, seeded with docs/guides/datapath.md's values: every MTU accepted is within the bounds,
// given once.
func FuzzParseMTUs(f *testing.F) {
	for _, s := range []string{"1500,9000", "1500", "9000,1500,9000", "576", " 1280 ", "65536"} {
		f.Add(s, 1280, 9000)
	}
	f.Fuzz(func(t *testing.T, s string, lo, hi int) {
		mtus, err := ParseMTUs(s, lo, hi)
		if err != nil {
			checkError(t, err)
			return
		}
		seen := map[int]bool{}
		for _, n := range mtus {
			if n < lo || n > hi || seen[n] {
				t.Fatalf("%q: MTU %d of %v accepted within %d–%d", s, n, mtus, lo, hi)
			}
			seen[n] = true
		}
	})
}

// FuzzParseNames feeds --paths, --modes, --targets, --rw and --iodepth, seeded with docs/guides/datapath.md's values:
// whatever is accepted is a known name (or depth), and a path or target given twice is numbered as such.
func FuzzParseNames(f *testing.F) {
	for _, s := range []string{"host,pod-same-node,vxlan,clusterip", "tcp-stream,tcp-rr,tcp-crr", "host,host,pod-cross-node,vxlan",
		"host,rootfs,emptydir,hostpath,pvc", "randread,randwrite", "1,32", "host,,host", "1024,0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if lanes, err := ParsePaths(s); err == nil {
			n := map[Path]int{}
			for _, l := range lanes {
				n[l.Path]++
				if !contains(Paths, l.Path) || l.Copy != n[l.Path] {
					t.Fatalf("%q: lane %+v", s, l)
				}
			}
		} else {
			checkError(t, err)
		}
		if modes, err := ParseModes(s); err == nil {
			for _, m := range modes {
				if !contains(Modes, m) {
					t.Fatalf("%q: mode %q", s, m)
				}
			}
		}
		if lanes, err := ParseTargets(s); err == nil {
			for _, l := range lanes {
				if !contains(Targets, l.Target) || l.Copy < 1 {
					t.Fatalf("%q: lane %+v", s, l)
				}
			}
		}
		if rws, err := ParseRWs(s); err == nil {
			for _, rw := range rws {
				if !contains(RWs, rw) {
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

func contains[T comparable](xs []T, x T) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func equal(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
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
