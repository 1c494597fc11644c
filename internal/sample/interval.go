package sample

import (
	"fmt"
	"time"
)

// MinInterval is the shortest sampling interval: below it the sampler cannot keep up and would measure
// itself. measure, the agent and the agent's manifest all check their --interval against it.
const MinInterval = 10 * time.Millisecond

// CheckInterval says what is wrong with d as the sampling interval, in the words of the --interval flag.
func CheckInterval(d time.Duration) error {
	switch {
	case d <= 0:
		return fmt.Errorf("--interval must be positive, got %s", d)
	case d < MinInterval:
		return fmt.Errorf("--interval %s is below the %s floor: the sampler cannot keep up and would measure itself", d, MinInterval)
	}
	return nil
}
