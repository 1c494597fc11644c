package experiment

import (
	"fmt"
	"strings"
	"testing"
)

// FuzzParseScale feeds a variant's scale entries, seeded with the guide's (docs/guides/prove-a-change.md: kube-system/coredns=1): an
// accepted entry has a namespace, a name and replicas of at least zero, and written back it reads the same.
func FuzzParseScale(f *testing.F) {
	for _, s := range []string{"kube-system/coredns=1", "default/web=0", "default/web=-1", "web=1", "a/b=2147483648", "a/b/c=1", "/b=1", "a/=1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ns, name, n, err := parseScale(s)
		if err != nil {
			if msg := err.Error(); !strings.HasPrefix(msg, "scale ") {
				t.Fatalf("error %q", msg)
			}
			return
		}
		if ns == "" || name == "" || n < 0 || strings.Contains(ns, "/") {
			t.Fatalf("%q accepted as %q/%q=%d", s, ns, name, n)
		}
		ns2, name2, n2, err := parseScale(fmt.Sprintf("%s/%s=%d", ns, name, n))
		if err != nil || ns2 != ns || name2 != name || n2 != n {
			t.Fatalf("%q read as %s/%s=%d, which reads back as %s/%s=%d (%v)", s, ns, name, n, ns2, name2, n2, err)
		}
	})
}
