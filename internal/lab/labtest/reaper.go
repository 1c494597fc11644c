package labtest

import "github.com/tare-dev/tare/internal/lab"

// ReleaseReaper ends the reaper that watches the labs TempDir made (lab.WatchWithProcess), once the tests
// have stopped them: TestMain calls it after m.Run, in a binary whose TestMain routes lab.Reap.
func ReleaseReaper() { lab.ReleaseProcessReaper() }
