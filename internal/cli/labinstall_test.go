package cli

import (
	"errors"
	"testing"
	"time"

	"github.com/tare-dev/tare/internal/lab"
)

// TestInstallProgress: lab install's progress lines, as a step starts and as it ends, with its time.
func TestInstallProgress(t *testing.T) {
	t.Parallel()
	k8s := "kube-apiserver, kube-controller-manager"
	for _, tc := range []struct {
		name    string
		step    lab.InstallStep
		elapsed time.Duration
		want    string
	}{
		{"start", lab.InstallStep{Name: k8s}, 1400 * time.Millisecond, "installing " + k8s + " (1s elapsed)"},
		{"built", lab.InstallStep{Name: k8s, Done: true, Took: 151*time.Second + 300*time.Millisecond,
			Components: []lab.Component{{Source: "built"}, {Source: "built"}}}, 160 * time.Second,
			k8s + ": built in 2m31s (2m40s elapsed)"},
		{"mixed sources, in order", lab.InstallStep{Name: "Debian packages", Done: true, Took: 20 * time.Second,
			Components: []lab.Component{{Source: "present"}, {Source: "apt"}, {Source: "present"}}}, 20 * time.Second,
			"Debian packages: present, apt in 20s (20s elapsed)"},
		{"cached: milliseconds", lab.InstallStep{Name: "kwok", Done: true, Took: 1234 * time.Microsecond,
			Components: []lab.Component{{Source: "cached"}}}, 2 * time.Millisecond, "kwok: cached in 1ms (0s elapsed)"},
		{"failed", lab.InstallStep{Name: "images", Done: true, Took: 3 * time.Second, Err: errors.New("no go")}, 5 * time.Second,
			"images: failed after 3s (5s elapsed)"},
		{"nothing got", lab.InstallStep{Name: "images", Done: true}, 0, "images: nothing to do in 0s (0s elapsed)"},
	} {
		if got := installProgress(tc.step, tc.elapsed); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
