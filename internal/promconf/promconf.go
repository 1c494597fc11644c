package promconf

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	shipped "github.com/tare-dev/tare/deploy/prometheus"
)

// Names of the shipped files.
const (
	ConfigFile    = "prometheus.yml" // scrape configuration with the tare-agent job
	RulesFile     = "rules.yml"      // recording rules
	RulesTestFile = "rules_test.yml" // promtool test rules input for RulesFile
	DashboardFile = "dashboard.json" // Grafana dashboard JSON model
)

// JobName is the scrape job of the shipped configuration that scrapes tare agents.
const JobName = "tare-agent"

// Files returns the names of the shipped files, in the order above.
func Files() []string { return []string{ConfigFile, RulesFile, RulesTestFile, DashboardFile} }

// Read returns the content of one shipped file, named by one of the constants above.
func Read(name string) ([]byte, error) {
	b, err := fs.ReadFile(shipped.FS(), name)
	if err != nil {
		return nil, fmt.Errorf("reading the shipped prometheus file %s: %w", name, err)
	}
	return b, nil
}

// WriteDir writes every shipped file into dir, which must exist, so that the configuration finds its rules
// beside it.
func WriteDir(dir string) error {
	for _, name := range Files() {
		b, err := Read(name)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return fmt.Errorf("writing %s: %w", name, err)
		}
	}
	return nil
}
