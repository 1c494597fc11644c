package datapath

import (
	"slices"
	"strings"
	"testing"
)

// FuzzParseSizes feeds --sizes and --bs (diskpath's FuzzParseBlockSizes holds --bs to its bounds), seeded with the values of the examples of docs/guides/datapath.md. Every size
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
		if err != nil || !slices.Equal(again, sizes) {
			t.Fatalf("%q read %v, written %v, read again %v (%v)", s, sizes, back, again, err)
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
