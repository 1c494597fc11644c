package density

import (
	"strconv"
	"strings"
	"testing"
)

// FuzzParseRate feeds --churn, seeded with the guide's values (docs/guides/size-pods.md: 1, 30/min) and its edges: an accepted
// rate is above 0 and at most MaxChurnRate a second, and written back per second it reads the same.
func FuzzParseRate(f *testing.F) {
	for _, s := range []string{"1", "0.5", "30/min", "2/s", "0", "11", "600/min", "NaN", "Inf", "-1/min", " 1 /s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRate(s)
		if err != nil {
			if msg := err.Error(); msg == "" || strings.ToLower(msg[:1]) != msg[:1] {
				t.Fatalf("error %q", msg)
			}
			return
		}
		if !(r > 0) || r > MaxChurnRate {
			t.Fatalf("%q accepted as %g a second", s, r)
		}
		if again, err := ParseRate(strconv.FormatFloat(r, 'g', -1, 64) + "/s"); err != nil || again != r {
			t.Fatalf("%q is %g a second, which reads back as %g (%v)", s, r, again, err)
		}
	})
}
