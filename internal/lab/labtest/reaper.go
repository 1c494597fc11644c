package labtest

import (
	"context"
	"fmt"
	"os"
	"sync"

	"github.com/tare-dev/tare/internal/lab"
)

// The labs of a test binary have a reaper (lab.StartReaper), started with the first TempDir: should the
// binary die before its clean-ups ran (go test's -timeout panics, a kill), the reaper stops every lab
// TempDir made. It serves only a binary whose TestMain routes reapers (lab.Reap); TestMain ends it
// cleanly with ReleaseReaper after the tests.
var (
	reaperOnce sync.Once
	reaper     *lab.Reaper
)

func watch(dir string) error {
	reaperOnce.Do(func() {
		lock, err := os.MkdirTemp("", "tare-test-reaper-")
		if err != nil {
			fmt.Fprintf(os.Stderr, "labtest: no reaper for this binary's labs: %v\n", err)
			return
		}
		r, err := lab.StartReaper(context.Background(), lab.ReaperJob{Lock: lock, What: "the test binary", RemoveLock: true}, func(string, ...any) {})
		if err != nil || r == nil {
			_ = os.RemoveAll(lock)
			if err != nil {
				fmt.Fprintf(os.Stderr, "labtest: no reaper for this binary's labs: %v\n", err)
			}
			return
		}
		reaper = r
	})
	return reaper.Watch(dir)
}

// ReleaseReaper tells the test binary's reaper, if one started, that the tests have cleaned up after
// themselves, and waits for it to end. TestMain calls it after m.Run.
func ReleaseReaper() {
	reaper.Release(true)
}
