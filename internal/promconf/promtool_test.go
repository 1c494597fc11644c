package promconf_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tare-dev/tare/internal/promconf"
	"github.com/tare-dev/tare/internal/promread/promtest"
)

// promtool returns the path of upstream promtool, built into tare's cache the first time: Debian's is built
// without Kubernetes service discovery and rejects the shipped scrape configuration.
func promtool(t *testing.T) string {
	t.Helper()
	return promtest.Upstream(t, "promtool")
}

func runPromtool(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), promtool(t), args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func shippedDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := promconf.WriteDir(dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestPromtoolCheckRules(t *testing.T) {
	t.Parallel()
	dir := shippedDir(t)
	if out, err := runPromtool(t, dir, "check", "rules", promconf.RulesFile); err != nil {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
}

// TestPromtoolTestRules runs the unit tests shipped beside the rules; their expected values are worked out
// by hand in rules_test.yml's comments.
func TestPromtoolTestRules(t *testing.T) {
	t.Parallel()
	dir := shippedDir(t)
	if out, err := runPromtool(t, dir, "test", "rules", promconf.RulesTestFile); err != nil {
		t.Fatalf("promtool test rules: %v\n%s", err, out)
	}
}

// TestPromtoolCheckConfig checks the shipped configuration as it is, and the two variants tare derives from
// it: Kubernetes service discovery through a kubeconfig (a Prometheus outside the cluster) and static targets.
func TestPromtoolCheckConfig(t *testing.T) {
	t.Parallel()
	dir := shippedDir(t)
	// As shipped, the job reads the ServiceAccount token of a Prometheus in a pod, which this machine has
	// not: promtool checks that the file exists, so the shipped file is checked for its syntax only.
	if out, err := runPromtool(t, dir, "check", "config", "--syntax-only", promconf.ConfigFile); err != nil {
		t.Fatalf("promtool check config %s: %v\n%s", promconf.ConfigFile, err, out)
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(minimalKubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	token := filepath.Join(dir, "token")
	if err := os.WriteFile(token, []byte("a-token"), 0o600); err != nil {
		t.Fatal(err)
	}
	discovery, err := promconf.Discovery(promconf.DiscoveryOptions{Kubeconfig: kubeconfig, TokenFile: token, Interval: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	static, err := promconf.Static(promconf.StaticOptions{Targets: []promconf.Target{
		{Address: "127.0.0.1:9100", Labels: map[string]string{"node": "n1", "namespace": "tare", "pod": "tare-agent-x"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	for name, cfg := range map[string][]byte{"discovery.yml": discovery, "static.yml": static} {
		if err := os.WriteFile(filepath.Join(dir, name), cfg, 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := runPromtool(t, dir, "check", "config", name); err != nil {
			t.Errorf("promtool check config on the %s variant: %v\n%s\n%s", name, err, out, cfg)
		}
	}
	if !strings.Contains(string(discovery), "kubeconfig_file: "+kubeconfig) || !strings.Contains(string(discovery), "scrape_interval: 2s") {
		t.Errorf("the discovery variant does not read the cluster through %s every 2s:\n%s", kubeconfig, discovery)
	}
}

// minimalKubeconfig is a kubeconfig promtool can load (it does not contact the server).
const minimalKubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: https://127.0.0.1:6443
contexts:
- name: c
  context:
    cluster: c
    user: u
current-context: c
users:
- name: u
  user:
    token: x
`
