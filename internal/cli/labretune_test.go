package cli

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/tare-dev/tare/internal/lab"
)

// TestLabRetuneBadInput: retune without a lab fails saying so and how to start one (exit status 1) and
// prints nothing on stdout; a --set without =VALUE or .FLAG, an unknown component in --set or --restart,
// and an argument are usage errors (exit status 2) that say what is wrong, before any lab is looked for.
func TestLabRetuneBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out, _, err := run(context.Background(), "lab", "retune", "--dir", dir, "--set", "kube-apiserver.v=2")
	var ec ExitCoder
	if !errors.Is(err, lab.ErrNotRunning) || errors.As(err, &ec) && ec.ExitCode() != 1 ||
		!strings.Contains(err.Error(), "no lab in "+dir+" (start one with tare lab up)") {
		t.Errorf("retune without a lab: %v, want no lab (exit 1)", err)
	}
	if out != "" {
		t.Errorf("retune without a lab printed %q", out)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--set", "kubelet"}, `--set "kubelet": no =VALUE`},
		{[]string{"--set", "kubelet=2"}, `--set "kubelet=2": no .FLAG after the component`},
		{[]string{"--set", "coredns.replicas=1"}, "unknown component coredns"},
		{[]string{"--restart", "kubectl"}, "--restart: unknown component kubectl (components: etcd, kube-apiserver,"},
		{[]string{"now"}, "unknown command"},
	} {
		_, _, err := run(context.Background(), append([]string{"lab", "retune", "--dir", dir}, c.args...)...)
		if !errors.As(err, &ec) || ec.ExitCode() != 2 || !strings.Contains(err.Error(), c.want) {
			t.Errorf("retune %v: %v, want a usage error (exit 2) saying %q", c.args, err, c.want)
		}
	}
}
