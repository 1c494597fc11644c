package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tare-dev/tare/internal/experiment"
)

// experimentCommands runs an experiment on a running cluster through the commands target (not the lab
// target: tare does not start or stop anything), with replica counts as the variants: CoreDNS at 2
// (baseline) and at 1. The apply command logs its environment and the replicas the previous trial left,
// so the test sees from the real cluster that every trial ran its own variant in the planned order; the
// guard runs with a user-given image.
func experimentCommands(t *testing.T, kubeconfig string) {
	dir := t.TempDir()
	log := filepath.Join(dir, "apply.log")
	replicas := fmt.Sprintf("kubectl --kubeconfig %s -n kube-system get deploy coredns -o jsonpath={.spec.replicas}", kubeconfig)
	spec := writeSpec(t, fmt.Sprintf(`name: dns-replicas
target:
  commands:
    apply: 'echo "$TARE_VARIANT|$TARE_VALUE|$TARE_SET|$(%s)" >> %s'
    wait: 'kubectl --kubeconfig %s -n kube-system wait --for=condition=Available deploy/coredns --timeout=60s'
    kubeconfig: %s
trials: 2
warmup: 0s
window: 3s
interval: 500ms
primary: node-busy
guard: {image: tare.lab/web:v1}
variants:
  - {name: dns-2, baseline: true, scale: [kube-system/coredns=2]}
  - {name: dns-1, scale: [kube-system/coredns=1], set: [kube-scheduler.v=2]}
`, replicas, log, kubeconfig, kubeconfig))
	out := filepath.Join(dir, "exp")
	guard := watchGuard(kubeconfig)
	stdout, stderr, err := run(context.Background(), "experiment", spec, "--out", out, "-o", "json")
	pods := guard.stop()
	if err != nil {
		t.Fatalf("experiment: %v\n%s", err, stderr)
	}
	r := decodeResults(t, stdout)
	want := map[string]string{"dns-2": "2", "dns-1": "1"}
	sets := map[string]string{"dns-2": "", "dns-1": "kube-scheduler.v=2"}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(r.Trials) != 4 || len(lines) != 4 {
		t.Fatalf("%d trials, %d applies, want 4 each:\n%s", len(r.Trials), len(lines), b)
	}
	checkGuard(t, r.Trials, pods)
	prev := "2" // as the test deployed it
	for i, tr := range r.Trials {
		if got, w := lines[i], fmt.Sprintf("%s||%s|%s", tr.Variant, sets[tr.Variant], prev); got != w {
			t.Errorf("apply %d saw %q, want %q (variant|value|set|replicas left by the trial before)", i+1, got, w)
		}
		prev = want[tr.Variant]
	}
	if got := kubectl(t, kubeconfig, "-n", "kube-system", "get", "deploy", "coredns", "-o", "jsonpath={.status.readyReplicas}"); got != prev {
		t.Errorf("after the last trial CoreDNS has %s ready replicas, want %s", got, prev)
	}
	if got := kubectl(t, kubeconfig, "get", "deploy,svc", "-l", "app=tare-guard", "-o", "name"); got != "" {
		t.Errorf("the guard was left behind: %s", got)
	}
	if _, ok := row(r, experiment.GuardReady); !ok {
		t.Errorf("no guard row in the results")
	}

	// An apply command that fails stops the experiment with its output.
	bad := writeSpec(t, `name: bad
target: {commands: {apply: 'echo cannot reach the cluster >&2; exit 3', kubeconfig: `+kubeconfig+`}}
trials: 2
window: 2s
variants: [{name: a}, {name: b, scale: [kube-system/coredns=1]}]
`)
	_, stderr, err = run(context.Background(), "experiment", bad, "--out", filepath.Join(dir, "bad"))
	if err == nil || !strings.Contains(err.Error(), "apply") || !strings.Contains(err.Error(), "exit status 3") ||
		!strings.Contains(err.Error(), "cannot reach the cluster") || !strings.Contains(err.Error(), "--resume") {
		t.Errorf("failing apply: %v\n%s", err, stderr)
	}
}
