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
// (lab.InstallHelm, a few minutes). Without go or the module proxy the test is unavailable.
func Helm(t testing.TB) string {
	t.Helper()
	return BuildOnce(t, "helm "+lab.HelmVersion, lab.HelmBin, lab.InstallHelm)
}

// PrometheusOperator returns the path of the Prometheus Operator at lab.PrometheusOperatorVersion, built
// into tare's cache the first time (lab.InstallPrometheusOperator, a few minutes). Without go or the module
// proxy the test is unavailable.
func PrometheusOperator(t testing.TB) string {
	t.Helper()
	return BuildOnce(t, "the Prometheus Operator "+lab.PrometheusOperatorVersion, lab.PrometheusOperatorBin, lab.InstallPrometheusOperator)
}

// BuildOnce returns cached() if it is there, else builds it with install, within the test's deadline and
// 15 minutes, and returns what install made. Tests that ask at once wait for one build. Without go or the
// module proxy the test is unavailable.
func BuildOnce(t testing.TB, what string, cached func() string, install func(context.Context) (lab.Component, error)) string {
	t.Helper()
	builds.Lock()
	defer builds.Unlock()
	if p := cached(); p != "" {
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
	c, err := install(ctx)
	if err != nil {
		testenv.Unavailable(t, "building %s: %v", what, err)
	}
	return c.Path
}

// builds serialises the builds of BuildOnce within a test binary.
var builds sync.Mutex
