package promconf_test

import (
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/tare-dev/tare/internal/promconf"
)

func TestStatic(t *testing.T) {
	t.Parallel()
	b, err := promconf.Static(promconf.StaticOptions{Interval: 2 * time.Second, Targets: []promconf.Target{
		{Address: "10.0.0.1:9100", Labels: map[string]string{"node": "a"}},
		{Address: "10.0.0.2:9100", Labels: map[string]string{"node": "b"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Global        map[string]string `json:"global"`
		RuleFiles     []string          `json:"rule_files"`
		ScrapeConfigs []map[string]any  `json:"scrape_configs"`
	}
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Global["scrape_interval"] != "2s" || cfg.Global["evaluation_interval"] != "2s" {
		t.Errorf("global %v; want 2s intervals", cfg.Global)
	}
	if len(cfg.RuleFiles) != 1 || cfg.RuleFiles[0] != promconf.RulesFile {
		t.Errorf("rule files %v; want the shipped %s", cfg.RuleFiles, promconf.RulesFile)
	}
	job := cfg.ScrapeConfigs[0]
	if job["job_name"] != promconf.JobName || job["honor_labels"] != true {
		t.Errorf("job %v; want %s with honor_labels kept", job, promconf.JobName)
	}
	if _, ok := job["kubernetes_sd_configs"]; ok {
		t.Error("kubernetes_sd_configs kept")
	}
	if _, ok := job["relabel_configs"]; ok {
		t.Error("relabel_configs kept")
	}
	if s := string(b); !strings.Contains(s, "10.0.0.2:9100") || !strings.Contains(s, "node: b") {
		t.Errorf("targets missing:\n%s", s)
	}
	for _, key := range []string{"scheme", "tls_config", "authorization"} {
		if _, ok := job[key]; ok {
			t.Errorf("%s kept for agents that serve plain HTTP (--auth none)", key)
		}
	}
	if _, err := promconf.Static(promconf.StaticOptions{}); err == nil {
		t.Error("no targets: no error")
	}
	// Agents that check their callers: TLS kept, the token given.
	b, err = promconf.Static(promconf.StaticOptions{TokenFile: "/etc/prom/token", Targets: []promconf.Target{{Address: "10.0.0.1:9847"}}})
	if err != nil {
		t.Fatal(err)
	}
	if s := string(b); !strings.Contains(s, "scheme: https") || !strings.Contains(s, "credentials_file: /etc/prom/token") {
		t.Errorf("with a token file:\n%s", s)
	}
}

// TestDiscoveryToken: --token-file replaces the ServiceAccount's token the shipped job presents.
func TestDiscoveryToken(t *testing.T) {
	t.Parallel()
	b, err := promconf.Discovery(promconf.DiscoveryOptions{TokenFile: "/tmp/prom-token"})
	if err != nil {
		t.Fatal(err)
	}
	if s := string(b); !strings.Contains(s, "credentials_file: /tmp/prom-token") || strings.Contains(s, "serviceaccount/token") {
		t.Errorf("with a token file:\n%s", s)
	}
	b, err = promconf.Discovery(promconf.DiscoveryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s := string(b); !strings.Contains(s, "credentials_file: /var/run/secrets/kubernetes.io/serviceaccount/token") || !strings.Contains(s, "scheme: https") {
		t.Errorf("as shipped:\n%s", s)
	}
}
