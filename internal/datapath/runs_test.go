package datapath

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestRoundsCancel: every slot runs in turn and is said; a cancel during the third trial says it but
// drops it (its window is not whole) and returns the two before it with the context's error.
func TestRoundsCancel(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var said []string
	r := Rounds[string, int]{Lanes: []string{"a", "b"}, N: 2, Seed: 1,
		Trial: func(seq int, sl SlotOf[string]) (int, error) {
			if seq == 3 {
				cancel()
			}
			return seq, nil
		},
		Name: func(l string) string { return "lane " + l },
		Line: func(t int) string { return fmt.Sprint("result ", t) },
		Say:  func(format string, a ...any) { said = append(said, fmt.Sprintf(format, a...)) },
	}
	got, err := r.Run(ctx)
	if !errors.Is(err, context.Canceled) || len(got) != 2 || got[0] != 1 || got[1] != 2 {
		t.Fatalf("run: %v, %v", got, err)
	}
	if len(said) != 3 || !strings.HasPrefix(said[2], "trial 3/4 (round 2): lane ") || !strings.HasSuffix(said[2], ": result 3") {
		t.Errorf("said %q", said)
	}
}

// TestRoundsError: an error from a trial ends the run with the trials before it, unsaid.
func TestRoundsError(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	var said int
	got, err := Rounds[string, int]{Lanes: []string{"a"}, N: 3, Trial: func(seq int, _ SlotOf[string]) (int, error) {
		if seq == 2 {
			return 0, boom
		}
		return seq, nil
	}, Name: func(l string) string { return l }, Line: func(t int) string { return fmt.Sprint(t) }, Say: func(string, ...any) { said++ }}.Run(context.Background())
	if !errors.Is(err, boom) || len(got) != 1 || said != 1 {
		t.Errorf("run: %v, %v, said %d", got, err, said)
	}
}
