// Package prometheus holds the Prometheus files tare ships for its agents: the scrape configuration, the
// recording rules with their promtool unit tests, and a Grafana dashboard. The package exists only to embed
// them, because go:embed reads files under its own directory; tare's code reads them through
// internal/promconf.
//
// Imports: none
package prometheus
