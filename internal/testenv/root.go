package testenv

import (
	"os"
	"testing"
)

// RequireRootEnv is the environment variable CI sets so that tests needing root fail instead of skipping:
// CI runs as root, and a test that skips there hides a broken check.
const RequireRootEnv = "TARE_REQUIRE_ROOT"

// NeedRoot skips t when the test does not run as root, or fails it when TARE_REQUIRE_ROOT=1. why says what
// needs root ("taskstats needs CAP_NET_ADMIN").
func NeedRoot(t testing.TB, why string) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv(RequireRootEnv) == "1" {
		t.Fatalf("needs root (%s), and %s=1 forbids skipping", why, RequireRootEnv)
	}
	t.Skipf("needs root: %s", why)
}

// Unavailable skips t because something it needs is missing on this machine (a peer tool, a kernel feature),
// or fails it when TARE_REQUIRE_ROOT=1: CI installs everything the tests need, so a miss there is a bug.
func Unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv(RequireRootEnv) == "1" {
		t.Fatalf("unavailable with %s=1: "+format, append([]any{RequireRootEnv}, args...)...)
	}
	t.Skipf(format, args...)
}
