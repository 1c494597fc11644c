package kernel

import (
	"errors"
	"fmt"
	"testing"
)

// TestNotSupported: a feature's sentinel matches itself and ErrNotSupported, through wrapping, and no other
// feature's sentinel.
func TestNotSupported(t *testing.T) {
	t.Parallel()
	a, b := NotSupported("tracing a unavailable"), NotSupported("tracing b unavailable")
	err := fmt.Errorf("opening a: %w: needs Linux 6.5", a)
	for _, tc := range []struct {
		target error
		want   bool
	}{{a, true}, {ErrNotSupported, true}, {b, false}, {ErrMalformed, false}} {
		if got := errors.Is(err, tc.target); got != tc.want {
			t.Errorf("errors.Is(%q, %q) = %v, want %v", err, tc.target, got, tc.want)
		}
	}
	if got, want := err.Error(), "opening a: tracing a unavailable: needs Linux 6.5"; got != want {
		t.Errorf("message %q, want %q", got, want)
	}
}
