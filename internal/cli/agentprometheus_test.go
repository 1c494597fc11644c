package cli

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/tare-dev/tare/internal/promconf"
)

// TestAgentPrometheus: tare agent prometheus writes the shipped files with the scrape job reading the cluster
// through the kubeconfig given (made absolute) in the namespace given, keeps files that exist unless
// --force, and refuses bad input with exit 2.
func TestAgentPrometheus(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	work := t.TempDir()
	kc := filepath.Join(work, "kubeconfig")
	if err := os.WriteFile(kc, []byte("apiVersion: v1\nkind: Config\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(work, "prom")
	out, errOut, err := run(ctx, "agent", "prometheus", "--dir", dir, "--kubeconfig", kc, "--namespace", "monitoring", "--interval", "5s")
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	for _, name := range promconf.Files() {
		if !strings.Contains(out, filepath.Join(dir, name)) {
			t.Errorf("output does not name %s:\n%s", name, out)
		}
		want, err := promconf.Read(name)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if name != promconf.ConfigFile && string(got) != string(want) {
			t.Errorf("%s differs from the shipped file", name)
		}
	}
	var cfg struct {
		Global        map[string]string `json:"global"`
		ScrapeConfigs []struct {
			JobName string `json:"job_name"`
			SD      []struct {
				Kubeconfig string `json:"kubeconfig_file"`
				Role       string `json:"role"`
				Namespaces struct {
					Names []string `json:"names"`
				} `json:"namespaces"`
			} `json:"kubernetes_sd_configs"`
		} `json:"scrape_configs"`
	}
	b, _ := os.ReadFile(filepath.Join(dir, promconf.ConfigFile))
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	if len(cfg.ScrapeConfigs) != 1 || len(cfg.ScrapeConfigs[0].SD) != 1 {
		t.Fatalf("scrape configs %+v: want the tare-agent job with one discovery", cfg.ScrapeConfigs)
	}
	sd := cfg.ScrapeConfigs[0].SD[0]
	if sd.Kubeconfig != kc || sd.Role != "pod" || len(sd.Namespaces.Names) != 1 || sd.Namespaces.Names[0] != "monitoring" ||
		cfg.Global["scrape_interval"] != "5s" {
		t.Errorf("discovery %+v, global %v: want role pod through %s in monitoring, every 5s", sd, cfg.Global, kc)
	}

	// A second run keeps what is there; --force overwrites it.
	if err := os.WriteFile(filepath.Join(dir, promconf.RulesFile), []byte("# edited\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, errOut, err := run(ctx, "agent", "prometheus", "--dir", dir); err == nil || !strings.Contains(errOut, "exists: nothing written") {
		t.Errorf("over existing files: %v, stderr %q: want a refusal", err, errOut)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, promconf.RulesFile)); string(b) != "# edited\n" {
		t.Error("a refused run changed an existing file")
	}
	if _, errOut, err := run(ctx, "agent", "prometheus", "--dir", dir, "--force"); err != nil {
		t.Errorf("--force: %v\n%s", err, errOut)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, promconf.RulesFile)); string(b) == "# edited\n" {
		t.Error("--force did not overwrite")
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"agent", "prometheus"}, "--dir"},
		{[]string{"agent", "prometheus", "--dir", dir, "--kubeconfig", filepath.Join(work, "missing")}, "--kubeconfig"},
		{[]string{"agent", "prometheus", "--dir", dir, "--interval", "10ms"}, "--interval"},
	} {
		_, errOut, err := run(ctx, tc.args...)
		var ec ExitCoder
		if !errors.As(err, &ec) || ec.ExitCode() != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: %v, stderr %q: want exit 2 naming %s", tc.args, err, errOut, tc.want)
		}
	}
}
