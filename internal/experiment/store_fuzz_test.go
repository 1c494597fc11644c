package experiment

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// FuzzOpen feeds --resume damaged experiment files: seeded with one captured on the lab
// (internal/cli/testdata/experiment/experiment.db), cut short and with bytes flipped. A damaged file must
// give an error, or a spec that checks and trials in order that the analysis can take, never a crash.
func FuzzOpen(f *testing.F) {
	good, err := os.ReadFile("../cli/testdata/experiment/experiment.db")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	for _, n := range []int{100, 4096, len(good) / 2} {
		f.Add(good[:n])
	}
	for _, off := range []int{18, 28, 100, 4096 + 8, len(good) / 2, len(good) - 100} {
		b := append([]byte(nil), good...)
		b[off] ^= 0x5a
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "experiment.db"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		st, trials, err := Open(context.Background(), dir)
		if err != nil {
			return
		}
		defer st.Close()
		for i := 1; i < len(trials); i++ {
			if trials[i].Seq <= trials[i-1].Seq {
				t.Fatalf("trials out of order: %d after %d", trials[i].Seq, trials[i-1].Seq)
			}
		}
		_ = Analyze(st.Spec, st.Plan, trials)
	})
}
