package cli

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tare-dev/tare/internal/lab"
)

// TestExperimentReplicas: an experiment on two control-plane-only labs side by side (replicas: 2), whose
// variants differ in a scheduler flag. Both labs start (the second with its ports moved by 100), every
// trial restarts the scheduler of both, the variant's run command runs once beside each lab with that
// lab's kubeconfig (it creates a ConfigMap there and lists the ConfigMaps: each lab has only its own, so
// the two are separate clusters), and the window measures both labs: the API servers' memory in a trial
// is more than either one's resident memory alone (read from /proc/PID/status by the run command: not
// the counter tare reads). Afterwards neither lab is left.
func TestExperimentReplicas(t *testing.T) {
	requireLab(t)
	notes := t.TempDir()
	spec := writeSpec(t, `name: replicas
target: {lab: {settle: 5s, control_plane_only: true, replicas: 2}}
trials: 2
warmup: 1s
window: 4s
metrics: [control-plane-cpu, component-memory, api-requests]
guard: {api_latency: false}
variants:
  - {name: base}
  - name: verbose
    set: [kube-scheduler.v=2]
    run: |
      d=$(dirname "$KUBECONFIG")
      f=`+notes+`/replica-$TARE_REPLICA
      kubectl create configmap "mine-$TARE_REPLICA" >/dev/null 2>&1
      pid=$(pgrep -f "$d/pki/apiserver.crt" | head -1)
      echo "$KUBECONFIG $(awk '/VmRSS/ {print $2}' /proc/$pid/status) $(kubectl get configmaps -o name | grep mine- | tr '\n' ' ')" >> "$f"
      sleep 600
`)
	out := filepath.Join(t.TempDir(), "rep")
	stdout, stderr, err := run(context.Background(), "experiment", spec, "--out", out, "--lab-dir", t.TempDir(), "-o", "json")
	t.Log(stderr)
	if err != nil {
		t.Fatalf("experiment: %v", err)
	}
	assertNoLab(t, out)
	if _, err := labState(filepath.Join(out, "lab-2")); err == nil {
		t.Errorf("the second lab still runs")
	}
	if left := lab.Leftovers(filepath.Join(out, "lab-2"), false); len(left) > 0 {
		t.Errorf("the second lab left %v", left)
	}
	if l, err := net.Listen("tcp", ":6543"); err != nil {
		t.Errorf("the second lab's API server port 6543 is still taken: %v", err)
	} else {
		l.Close()
	}
	for _, want := range []string{"lab 1/2 up in", "lab 2/2 up in", "(its ports +100)", "2 labs up in", "kube-scheduler restarted on 2 labs"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("the experiment's output lacks %q", want)
		}
	}
	r := decodeResults(t, stdout)
	// The labs' start (over a minute: the second starts 60 s after the first) is no trial's: the first
	// trial starts with its restart, as every other one does.
	for i := 1; i < len(r.Trials); i++ {
		if gap := r.Trials[i].Started.Sub(r.Trials[i-1].Started); gap > 30*time.Second {
			t.Errorf("trial %d starts %s after trial %d: the labs' start counted in a trial?", r.Trials[i].Seq, gap, r.Trials[i-1].Seq)
		}
	}
	maxRSS := 0.0 // MiB, of one API server
	for k := 1; k <= 2; k++ {
		b, err := os.ReadFile(filepath.Join(notes, fmt.Sprintf("replica-%d", k)))
		if err != nil {
			t.Fatalf("the run command beside lab %d: %v", k, err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			f := strings.Fields(line)
			wantDir := filepath.Join(out, "lab")
			if k > 1 {
				wantDir = filepath.Join(out, fmt.Sprintf("lab-%d", k))
			}
			if len(f) != 3 || filepath.Dir(f[0]) != wantDir || f[2] != fmt.Sprintf("configmap/mine-%d", k) {
				t.Errorf("the run command beside lab %d saw %q, want its kubeconfig in %s and only its own ConfigMap", k, line, wantDir)
				continue
			}
			kb, _ := strconv.ParseFloat(f[1], 64)
			maxRSS = max(maxRSS, kb/1024)
		}
	}
	for _, tr := range r.Trials {
		if tr.Status != "ok" {
			t.Errorf("trial %d (%s): %s %s", tr.Seq, tr.Variant, tr.Status, tr.Error)
			continue
		}
		if rate := tr.Metrics["api-requests"]; !(rate > 0) {
			t.Errorf("trial %d: no API request rate (%v)", tr.Seq, rate)
		}
		if mem := tr.Metrics["kube-apiserver-memory"]; !(mem > 1.3*maxRSS) {
			t.Errorf("trial %d: the API servers' memory %.0f MiB, not more than one API server's %.0f MiB: one lab measured?", tr.Seq, mem, maxRSS)
		}
	}
}
