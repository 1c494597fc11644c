package netpath

import (
	"slices"
	"strings"
	"testing"
)

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

// FuzzParseNames feeds --paths and --modes, seeded with docs/guides/datapath.md's values:
// whatever is accepted is a known name and a path given twice is numbered as such.
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
				if !slices.Contains(Paths, l.Path) || l.Copy != n[l.Path] {
					t.Fatalf("%q: lane %+v", s, l)
				}
			}
		} else {
			checkError(t, err)
		}
		if modes, err := ParseModes(s); err == nil {
			for _, m := range modes {
				if !slices.Contains(Modes, m) {
					t.Fatalf("%q: mode %q", s, m)
				}
			}
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
