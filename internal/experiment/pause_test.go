package experiment

import (
	"strings"
	"testing"
)

// TestParsePauseVariant: pause: true marks a variant whose window is measured with the lab paused; it
// needs the lab target, since only tare's lab can be paused.
func TestParsePauseVariant(t *testing.T) {
	t.Parallel()
	s, err := Parse([]byte("name: p\ntrials: 5\nwindow: 10s\nvariants: [{name: running}, {name: paused, pause: true}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s.Variants[0].Pause || !s.Variants[1].Pause || !s.Variants[0].Baseline {
		t.Errorf("variants = %+v, want running (baseline) and paused", s.Variants)
	}
	if v := s.variant("paused"); !v.Pause {
		t.Errorf("variant(paused) = %+v", v)
	}
	_, err = Parse([]byte("name: p\ntrials: 5\nwindow: 10s\ntarget: {commands: {apply: 'true'}}\nvariants: [{name: a}, {name: b, pause: true}]\n"))
	if err == nil || !strings.Contains(err.Error(), "variant b: pause freezes tare's lab; it needs the lab target") {
		t.Errorf("pause with a commands target: %v", err)
	}
}
