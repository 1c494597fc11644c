package promconf_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tare-dev/tare/internal/promconf"
	"github.com/tare-dev/tare/internal/testenv"
)

// promtool returns the path of promtool (Debian's prometheus package), or stops the test without it.
func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		testenv.Unavailable(t, "promtool not found (apt-get install prometheus): %v", err)
	}
	return p
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

// TestPromtoolCheckConfig checks the shipped configuration. Debian's promtool is built without Kubernetes
// service discovery (it rejects kubernetes_sd_configs as an unknown field); with it, the test checks the
// static variant, which keeps every other setting of the shipped file, and says so.
func TestPromtoolCheckConfig(t *testing.T) {
	t.Parallel()
	dir := shippedDir(t)
	out, err := runPromtool(t, dir, "check", "config", promconf.ConfigFile)
	if err == nil {
		return
	}
	if !strings.Contains(out, "kubernetes_sd_configs not found") {
		t.Fatalf("promtool check config: %v\n%s", err, out)
	}
	static, serr := promconf.Static(promconf.StaticOptions{Targets: []promconf.Target{
		{Address: "127.0.0.1:9100", Labels: map[string]string{"node": "n1", "namespace": "tare", "pod": "tare-agent-x"}},
	}})
	if serr != nil {
		t.Fatal(serr)
	}
	if werr := os.WriteFile(filepath.Join(dir, "static.yml"), static, 0o644); werr != nil {
		t.Fatal(werr)
	}
	if out, err := runPromtool(t, dir, "check", "config", "static.yml"); err != nil {
		t.Fatalf("promtool check config on the static variant: %v\n%s\n%s", err, out, static)
	}
	t.Skipf("this promtool lacks Kubernetes service discovery (Debian's build): checked the static variant only; "+
		"check %s with an upstream promtool", promconf.ConfigFile)
}
