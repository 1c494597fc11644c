package record

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tare-dev/tare/internal/summary"
)

// FuzzRead feeds the recording reader damaged files: seeded with a recording captured on a real machine
// (internal/cli/testdata/recording.db), cut short at page boundaries and with bytes flipped in the
// header, the schema and the data pages. A damaged file must give an error or a recording the report can
// summarise, never a crash.
func FuzzRead(f *testing.F) {
	good, err := os.ReadFile("../cli/testdata/recording.db")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	for _, n := range []int{16, 100, 4096, len(good) / 2, len(good) - 4096} {
		f.Add(good[:n])
	}
	for _, off := range []int{18, 28, 56, 100, 4096 + 8, len(good) / 2, len(good) - 100} {
		b := append([]byte(nil), good...)
		b[off] ^= 0x5a
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		path := filepath.Join(t.TempDir(), "r.db")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		rec, err := Read(context.Background(), path)
		if took := time.Since(start); took > 2*time.Second {
			t.Fatalf("reading a %d-byte file took %s (%v)", len(b), took, err)
		}
		if err != nil {
			return
		}
		for i := 1; i < len(rec.Samples); i++ {
			if rec.Samples[i].Seq <= rec.Samples[i-1].Seq {
				t.Fatalf("samples out of order: seq %d after %d", rec.Samples[i].Seq, rec.Samples[i-1].Seq)
			}
		}
		_ = summary.Build(rec.Meta, rec.Samples, summary.Options{Top: 5})
		if took := time.Since(start); took > 2*time.Second {
			t.Fatalf("reading and summarising a %d-byte file took %s", len(b), took)
		}
	})
}
