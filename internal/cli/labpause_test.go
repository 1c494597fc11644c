package cli

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/tare-dev/tare/internal/lab"
)

// TestLabPauseWithoutLab: pause and unpause without a lab fail with the reason and how to start one (exit
// status 1, not a usage error), print nothing on stdout, and refuse arguments and an unknown --freezer as a
// usage error (exit 2).
func TestLabPauseWithoutLab(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, verb := range []string{"pause", "unpause"} {
		out, _, err := run(context.Background(), "lab", verb, "--dir", dir)
		var ec ExitCoder
		if !errors.Is(err, lab.ErrNotRunning) || errors.As(err, &ec) && ec.ExitCode() != 1 {
			t.Errorf("%s without a lab: %v, want no lab (exit 1)", verb, err)
		}
		if err != nil && !strings.Contains(err.Error(), "no lab in "+dir+" (start one with tare lab up)") {
			t.Errorf("%s without a lab says %q", verb, err)
		}
		if out != "" {
			t.Errorf("%s without a lab printed %q", verb, out)
		}
		_, _, err = run(context.Background(), "lab", verb, "--dir", dir, "now")
		if !errors.As(err, &ec) || ec.ExitCode() != 2 {
			t.Errorf("%s with an argument: %v, want a usage error (exit 2)", verb, err)
		}
	}
	_, _, err := run(context.Background(), "lab", "pause", "--dir", dir, "--freezer", "v3")
	var ec ExitCoder
	if !errors.As(err, &ec) || ec.ExitCode() != 2 || !strings.Contains(err.Error(), `--freezer: freezer "v3": want auto, v1 or v2`) {
		t.Errorf("pause --freezer v3: %v, want a usage error (exit 2) naming the values", err)
	}
}

// TestLabPauseCLI runs pause, status and unpause through the CLI on a real lab (control plane only, which
// is quick to start), and a pause whose context is already cancelled (Ctrl-C): it is undone, and says so.
func TestLabPauseCLI(t *testing.T) {
	requireLab(t)
	ctx := context.Background()
	dir, _, _ := labUp(ctx, t, "--control-plane-only")
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, _, err := run(cancelled, "lab", "pause", "--dir", dir); err == nil || !strings.Contains(err.Error(), "nothing was left frozen") {
		t.Errorf("pause interrupted at once: %v, want undone", err)
	}
	out, _, err := run(ctx, "lab", "pause", "--dir", dir)
	if err != nil || !strings.Contains(out, "paused etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok in ") {
		t.Fatalf("pause: %v\n%s", err, out)
	}
	out, _, err = run(ctx, "lab", "status", "--dir", dir)
	if err != nil || !strings.Contains(out, "NOT READY: paused since ") {
		t.Errorf("status of a paused lab: %v\n%s", err, out)
	}
	if _, _, err := run(ctx, "lab", "pause", "--dir", dir); !errors.Is(err, lab.ErrPaused) || !strings.Contains(err.Error(), "tare lab unpause resumes it") {
		t.Errorf("pause twice: %v", err)
	}
	out, _, err = run(ctx, "lab", "unpause", "--dir", dir)
	if err != nil || !strings.Contains(out, "thawed 5 processes") || !strings.Contains(out, "/readyz ok after") {
		t.Errorf("unpause: %v\n%s", err, out)
	}
	if out, _, err := run(ctx, "lab", "status", "--dir", dir); err != nil || !strings.Contains(out, ": ready") {
		t.Errorf("status after unpause: %v\n%s", err, out)
	}
	if _, _, err := run(ctx, "lab", "unpause", "--dir", dir); !errors.Is(err, lab.ErrNotPaused) {
		t.Errorf("unpause of a running lab: %v", err)
	}
}
