package main

import (
	"math/rand/v2"
	"testing"
)

// Labs whose only work is a burst every 60 s (each at its own point of the minute) and a little white
// noise: windows started 60 s apart take each lab's burst whole or not at all, the same every round, so
// the phases' estimate sees only the white noise; windows 26 s apart catch the bursts by chance.
func TestReplayKeepsTime(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	labs := make([][]float64, 16)
	for k := range labs {
		at := rng.IntN(60)
		labs[k] = make([]float64, 900)
		for i := range labs[k] {
			labs[k][i] = 30 + rng.NormFloat64()
			if i%60 == at {
				labs[k][i] += 120
			}
		}
	}
	inStep, ok1 := replay(labs, 45, 60, 600)
	drifting, ok2 := replay(labs, 20, 26, 600)
	if !ok1 || !ok2 {
		t.Fatal("no replay")
	}
	t.Logf("60 s apart: sd %.2fm, detects %.2f%%; 26 s apart: sd %.2fm, detects %.2f%%", inStep.sd, inStep.mdePct, drifting.sd, drifting.mdePct)
	if inStep.rounds != 10 || drifting.rounds != 23 {
		t.Errorf("rounds %d and %d, want 10 and 23 in 600 s", inStep.rounds, drifting.rounds)
	}
	// White noise of sd 1 a second: a share of 8 labs over 45 s varies by √8/√45, a difference by √2 of that.
	if white := 1.414 * 2.83 / 6.71; inStep.sd > 1.5*white || drifting.sd < 5*inStep.sd {
		t.Errorf("sd %.2f (60 s apart; white noise alone %.2f) against %.2f (26 s apart)", inStep.sd, white, drifting.sd)
	}
	if _, ok := replay(labs, 70, 60, 600); ok {
		t.Error("a window longer than the spacing replayed")
	}
}
