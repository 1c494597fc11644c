package fit

import (
	"sort"
	"strings"
	"testing"
)

// FuzzParseList feeds --request and --overhead, seeded with the guide's values (docs/guides/size-pods.md): an accepted list names
// each resource once with a quantity of at least zero, and written back (NAME=QUANTITY, comma-separated)
// it reads the same.
func FuzzParseList(f *testing.F) {
	for _, s := range []string{"cpu=500m,memory=1Gi", "cpu=250m,memory=512Mi", "cpu=2m,memory=4Mi", "cpu=-1", "cpu=1,cpu=2", "=1", ",", "memory=1e3", "cpu=0.5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l, err := ParseList(s)
		if err != nil {
			if msg := err.Error(); msg == "" {
				t.Fatal("empty error")
			}
			return
		}
		if len(l) == 0 {
			t.Fatalf("%q accepted as an empty list", s)
		}
		var back []string
		for name, q := range l {
			if name == "" || q.Sign() < 0 {
				t.Fatalf("%q: %s=%s accepted", s, name, q.String())
			}
			back = append(back, string(name)+"="+q.String())
		}
		sort.Strings(back)
		again, err := ParseList(strings.Join(back, ","))
		if err != nil {
			t.Fatalf("%q read as %v, which reads back as an error: %v", s, back, err)
		}
		for name, q := range l {
			if a, ok := again[name]; !ok || a.Cmp(q) != 0 {
				t.Fatalf("%q: %s=%s reads back as %s", s, name, q.String(), a.String())
			}
		}
	})
}
