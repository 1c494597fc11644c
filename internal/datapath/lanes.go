package datapath

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/tare-dev/tare/internal/stats"
)

// This file holds what every verb's plan shares: the trial slots and their interleaved order, the
// cross product of the compared places (paths, targets) with the settings swept, and the flags' lists.

// SlotOf is one trial of a run: a lane (L: a net Lane, a DiskLane) in a round.
type SlotOf[L any] struct {
	Round int `json:"round"` // from 1
	Lane  L   `json:"lane"`
}

// Order returns every lane once per round, shuffled within each round (stats.ShuffledRounds), so that no
// lane has all its trials first or last and a drift of the node over the run is not mistaken for a
// difference between lanes.
func Order[L any](lanes []L, rounds int, rng *rand.Rand) []SlotOf[L] {
	var out []SlotOf[L]
	for i, round := range stats.ShuffledRounds(lanes, rounds, rng) {
		for _, l := range round {
			out = append(out, SlotOf[L]{Round: i + 1, Lane: l})
		}
	}
	return out
}

// PlanLanes is every lane of a run: for each setting of the sweep (a mode and size, a pattern, block size
// and depth: the lanes compared with each other), in the order given, each place the run compares (a
// path, a target), in the order given, as lanes makes them (several for a place measured at several
// settings of its own, such as a path's MTUs).
func PlanLanes[S, P, L any](settings []S, places []P, lanes func(s S, p P) []L) []L {
	var out []L
	for _, s := range settings {
		for _, p := range places {
			out = append(out, lanes(s, p)...)
		}
	}
	return out
}

// Cross is every pair of a and b, a's outer: the settings of a sweep over two of them.
func Cross[A, B, C any](as []A, bs []B, pair func(A, B) C) []C {
	out := make([]C, 0, len(as)*len(bs))
	for _, a := range as {
		for _, b := range bs {
			out = append(out, pair(a, b))
		}
	}
	return out
}

// ParsePlaces reads a flag that names the places a run compares (paths, targets): known names,
// comma-separated, what they name saying which in an error. A name may repeat (host,host: an A/A check):
// lane makes each place's lane with its copy number, 1 for its first, 2 for its second, ….
func ParsePlaces[P ~string, L any](s, what string, known []P, lane func(p P, n int) L) ([]L, error) {
	ps, err := parseNames(s, what, known)
	if err != nil {
		return nil, err
	}
	out := make([]L, len(ps))
	for i, n := range copies(ps) {
		out[i] = lane(ps[i], n)
	}
	return out, nil
}

// ParseSet reads a flag of settings swept (modes, patterns): known names, comma-separated, each kept once.
func ParseSet[T ~string](s, what string, known []T) ([]T, error) {
	xs, err := parseNames(s, what, known)
	return Unique(xs), err
}

// parseNames reads a comma-separated list of known names, what they name saying which in an error.
func parseNames[T ~string](s, what string, known []T) ([]T, error) {
	var out []T
	for _, f := range strings.Split(s, ",") {
		x := T(strings.TrimSpace(f))
		if !slices.Contains(known, x) {
			return nil, fmt.Errorf("unknown %s %q (known: %s)", what, x, join(known))
		}
		out = append(out, x)
	}
	return out, nil
}

// copies numbers each item's occurrences: 1 for its first, 2 for its second, ….
func copies[T comparable](xs []T) []int {
	seen := map[T]int{}
	out := make([]int, len(xs))
	for i, x := range xs {
		seen[x]++
		out[i] = seen[x]
	}
	return out
}

// Unique keeps the first of each item, in order.
func Unique[T comparable](xs []T) []T {
	var out []T
	for _, x := range xs {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

// ParseSizes reads --sizes: bytes, with an optional k (1024) or m suffix: 64,1k,16k,128k.
func ParseSizes(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.ToLower(strings.TrimSpace(f))
		mult := 1
		switch {
		case strings.HasSuffix(f, "k"):
			mult, f = 1<<10, strings.TrimSuffix(f, "k")
		case strings.HasSuffix(f, "m"):
			mult, f = 1<<20, strings.TrimSuffix(f, "m")
		}
		n, err := strconv.Atoi(f)
		if err != nil || n <= 0 || n > (1<<30)/mult {
			return nil, fmt.Errorf("size %q: want a positive number of bytes, optionally with k or m (64,1k,16k,128k)", f)
		}
		if !slices.Contains(out, n*mult) {
			out = append(out, n*mult)
		}
	}
	return out, nil
}

// FormatSize writes a size as ParseSizes reads it.
func FormatSize(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dm", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%dk", n>>10)
	}
	return strconv.Itoa(n)
}

func join[T ~string](xs []T) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = string(x)
	}
	return strings.Join(s, ", ")
}

// RunsOf splits xs into runs of neighbours that same puts together.
func RunsOf[T any](xs []T, same func(a, b T) bool) [][]T {
	var out [][]T
	for _, x := range xs {
		if n := len(out); n > 0 && same(out[n-1][0], x) {
			out[n-1] = append(out[n-1], x)
			continue
		}
		out = append(out, []T{x})
	}
	return out
}

// Keep returns the items ok keeps, in order.
func Keep[T any](xs []T, ok func(T) bool) []T {
	var out []T
	for _, x := range xs {
		if ok(x) {
			out = append(out, x)
		}
	}
	return out
}
