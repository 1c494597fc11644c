package density

import (
	"fmt"
	"math/rand/v2"

	"github.com/tare-dev/tare/internal/stats"
)

// Step is one measured window: the pods running on the node during it, in one trial.
type Step struct {
	Trial int `json:"trial"` // from 1
	Pods  int `json:"pods"`
}

// Order returns every count once per trial, shuffled within each trial, so that a drift of the node over
// the run (a cache warming, a log growing) is not mistaken for an effect of the pod count.
func Order(counts []int, trials int, rng *rand.Rand) []Step {
	var out []Step
	for i, round := range stats.ShuffledRounds(counts, trials, rng) {
		for _, n := range round {
			out = append(out, Step{Trial: i + 1, Pods: n})
		}
	}
	return out
}

// MaxPodCount bounds a pod count: far beyond any node (110 by default) and any kwok run tare makes.
const MaxPodCount = 50000

// CheckCounts says what is wrong with the pod counts asked for: fewer than two, negative, above
// MaxPodCount, not increasing, or more than the node may run (maxPods, 0 when unknown) beside the pods
// already on it.
func CheckCounts(counts []int, maxPods, running int) error {
	if len(counts) < 2 {
		return fmt.Errorf("%d pod counts: a line needs at least two", len(counts))
	}
	for i, n := range counts {
		if n < 0 {
			return fmt.Errorf("pod count %d is negative", n)
		}
		if n > MaxPodCount {
			return fmt.Errorf("pod count %d is above %d: no cluster tare measures holds that many pods (a node takes 110 by default)", n, MaxPodCount)
		}
		if i > 0 && n <= counts[i-1] {
			return fmt.Errorf("pod counts must increase: %d after %d", n, counts[i-1])
		}
	}
	if top := counts[len(counts)-1]; maxPods > 0 && top+running > maxPods {
		return fmt.Errorf("%d pods beside the %d already on the node exceed its maxPods (%d)", top, running, maxPods)
	}
	return nil
}
