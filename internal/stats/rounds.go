package stats

import (
	"math/rand/v2"
	"slices"
)

// ShuffledRounds returns every item once per round, each round in a new random order, so that a drift of
// the machine over a run (a cache warming, a log growing) falls on every item alike and is not mistaken
// for a difference between them. Density steps and datapath trials are planned with it.
func ShuffledRounds[T any](items []T, rounds int, rng *rand.Rand) [][]T {
	out := make([][]T, 0, max(rounds, 0))
	for range rounds {
		perm := slices.Clone(items)
		rng.Shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
		out = append(out, perm)
	}
	return out
}
