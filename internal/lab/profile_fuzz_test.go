package lab

import (
	"strings"
	"testing"
)

// FuzzParseSet feeds --set COMPONENT.FLAG=VALUE (also a spec's set lists) arbitrary text, seeded with the
// tuned profile's own settings. What it accepts names a known component and a flag that the lab can put
// on a command line, and reads back the same.
func FuzzParseSet(f *testing.F) {
	for _, t := range tuned {
		f.Add(t.Component + "." + t.Flag + "=" + t.Value)
	}
	f.Add("kube-apiserver.--max-requests-inflight=100")
	f.Add("etcd.snapshot-count=")
	f.Fuzz(func(t *testing.T, s string) {
		tu, err := ParseSet(s)
		if err != nil {
			return
		}
		if tu.Flag == "" || strings.HasPrefix(tu.Flag, "-") || strings.ContainsAny(tu.Flag, " \t=") {
			t.Fatalf("ParseSet(%q) accepted flag %q", s, tu.Flag)
		}
		again, err := ParseSet(tu.Component + "." + tu.Flag + "=" + tu.Value)
		if err != nil || again != tu {
			t.Fatalf("ParseSet(%q) = %+v, but its own form reads back as %+v, %v", s, tu, again, err)
		}
		args := applyTunings(tu.Component, []string{"--" + tu.Flag + "=old", "--other"}, []Tuning{tu})
		if args[len(args)-1] != "--"+tu.Flag+"="+tu.Value || len(args) != 2 {
			t.Fatalf("applying %+v gave %q", tu, args)
		}
	})
}
