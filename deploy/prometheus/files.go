// Package prometheus holds the Prometheus files tare ships for its agents: the scrape configuration, the
// recording rules with their promtool unit tests, and a Grafana dashboard. The package exists only to embed
// them, because go:embed reads files under its own directory; tare's code reads them through
// internal/promconf.
package prometheus

import (
	"embed"
	"io/fs"
)

//go:embed prometheus.yml rules.yml rules_test.yml dashboard.json
var files embed.FS

// FS returns the shipped files, at the root of the file system under the names they have in this directory.
func FS() fs.FS { return files }
