// Package progress draws the status line long verbs show on a terminal: elapsed and remaining time,
// node busy and the busiest groups over the last few seconds, redrawn in place. A nil *Line does
// nothing, so callers hold one only when stdout and stderr are terminals and the output is not JSON.
//
// It owns the line's layout and redraw policy (at most four redraws a second, clipped to the terminal's
// width by runes, warnings printed above it, cleared before the report). It imports sample for the
// samples it summarises. A new field on the line goes in live.go's format.
//
// Imports: sample
package progress
