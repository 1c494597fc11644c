package datapath

import (
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestPlanLanes: the settings are the outer loop, the places the inner, and a place may make several
// lanes of a setting.
func TestPlanLanes(t *testing.T) {
	t.Parallel()
	settings := Cross([]string{"r", "w"}, []int{1, 2}, func(s string, n int) string { return s + string(rune('0'+n)) })
	if !cmp.Equal(settings, []string{"r1", "r2", "w1", "w2"}) {
		t.Fatalf("settings %v", settings)
	}
	got := PlanLanes(settings[:2], []string{"a", "b"}, func(s, p string) []string {
		if p == "b" {
			return []string{p + s + "x", p + s + "y"}
		}
		return []string{p + s}
	})
	want := []string{"ar1", "br1x", "br1y", "ar2", "br2x", "br2y"}
	if !cmp.Equal(got, want) {
		t.Errorf("lanes %v, want %v", got, want)
	}
}

// TestOrderRounds: every lane once a round, rounds counted from 1 and run one after the other.
func TestOrderRounds(t *testing.T) {
	t.Parallel()
	lanes := []string{"a", "b", "c", "d"}
	slots := Order(lanes, 3, rand.New(rand.NewPCG(3, 4)))
	if len(slots) != 12 {
		t.Fatalf("%d slots", len(slots))
	}
	for i, s := range slots {
		if s.Round != i/4+1 {
			t.Errorf("slot %d in round %d", i, s.Round)
		}
	}
	for r := range 3 {
		seen := map[string]bool{}
		for _, s := range slots[4*r : 4*r+4] {
			seen[s.Lane] = true
		}
		if len(seen) != 4 {
			t.Errorf("round %d: %v", r+1, seen)
		}
	}
}
