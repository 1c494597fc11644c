package labtest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/tare-dev/tare/internal/lab"
	"github.com/tare-dev/tare/internal/testenv"
)

// Helm returns the path of helm at lab.HelmVersion, built into tare's cache the first time
// (lab.InstallHelm, a few minutes). Without go or the module proxy the test is unavailable. Tests that ask
// at once wait for one build.
func Helm(t testing.TB) string {
	t.Helper()
	helmBuild.Lock()
	defer helmBuild.Unlock()
	if p := lab.HelmBin(); p != "" {
		return p
	}
	end := time.Now().Add(15 * time.Minute)
	if d, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if testEnd, ok := d.Deadline(); ok && testEnd.Add(-30*time.Second).Before(end) {
			end = testEnd.Add(-30 * time.Second)
		}
	}
	ctx, cancel := context.WithDeadline(context.Background(), end)
	defer cancel()
	c, err := lab.InstallHelm(ctx)
	if err != nil {
		testenv.Unavailable(t, "building helm %s: %v", lab.HelmVersion, err)
	}
	return c.Path
}

// helmBuild serialises Helm's builds within a test binary.
var helmBuild sync.Mutex
