package pprof

import (
	"bytes"
	"io"
	"os"
	"testing"

	"github.com/google/pprof/profile"
)

// FuzzProfile feeds what a component's /debug/pprof/profile might answer through what explain does with
// it: parse, top functions, flame graph frames and SVG. Seeded with a CPU profile of the lab's
// kube-apiserver (testdata/kube-apiserver.pprof).
func FuzzProfile(f *testing.F) {
	b, err := os.ReadFile("testdata/kube-apiserver.pprof")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	if p, err := profile.ParseData(b); err == nil {
		var raw bytes.Buffer // the same profile uncompressed: the fuzzer mutates protobuf, not gzip
		if err := p.WriteUncompressed(&raw); err != nil {
			f.Fatal(err)
		}
		f.Add(raw.Bytes())
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := profile.ParseData(b)
		if err != nil {
			return
		}
		s := Summarize("fuzz", p, 10)
		if len(s.Top) > 10 {
			t.Fatalf("%d top functions, asked for 10", len(s.Top))
		}
		for _, fn := range s.Top {
			if fn.FlatPct < 0 || fn.FlatPct > 100 || fn.CumPct < fn.FlatPct || fn.CumPct > 100 {
				t.Fatalf("%+v: shares outside 0–100%% of the profile's CPU", fn)
			}
		}
		// The root spans the profile's CPU; every frame lies within it.
		frames := Frames(p)
		for _, fr := range frames {
			if fr.End < fr.Start || fr.Start < 0 || fr.End > frames[0].End {
				t.Fatalf("frame %+v outside the root %+v", fr, frames[0])
			}
		}
		if err := FlameSVG(io.Discard, "fuzz", p); err != nil {
			t.Fatalf("flame graph of a parsed profile: %v", err)
		}
	})
}
