package agent

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// FuzzParseWindow feeds /summary's window parameter, seeded with the values tare cluster measure sends
// (time.Duration's String of its --duration) and the ones the agent's tests ask for. An accepted window
// is at least one interval and at most the ring's span; a refused one is the caller's mistake (400) with
// a lower-case message that names what to give.
func FuzzParseWindow(f *testing.F) {
	for _, s := range []string{"", "2s", "1m0s", "5m0s", "10s", "1h0m0s", "x", "250ms", "-1s", "0", "9223372036854775807ns"} {
		f.Add(s, int64(250*time.Millisecond), int64(10*time.Second))
	}
	f.Add("60s", int64(time.Second), int64(5*time.Minute))
	f.Fuzz(func(t *testing.T, q string, interval, window int64) {
		if interval <= 0 || window < interval || window/interval > 1<<12 {
			return // Options.validate refuses these before a ring is made
		}
		o := Options{Interval: time.Duration(interval), Window: time.Duration(window)}
		st := newState(o.ringLen(), o.Window)
		span := time.Duration(len(st.ring)-1) * o.Interval
		d, err := st.parseWindow(q, o.Interval)
		if err != nil {
			var we windowError
			if !errors.As(err, &we) {
				t.Fatalf("error %v is not a windowError (a 400)", err)
			}
			if msg := err.Error(); msg == "" || strings.ToLower(msg[:1]) != msg[:1] || !strings.Contains(msg, "give") {
				t.Fatalf("error %q does not start lower case or say what to give", msg)
			}
			return
		}
		if d < o.Interval && q != "" || d > span || d <= 0 && span > 0 {
			t.Fatalf("window %q accepted as %s: want from %s to %s", q, d, o.Interval, span)
		}
	})
}
