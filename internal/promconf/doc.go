// Package promconf gives tare's code the Prometheus files shipped under deploy/prometheus: the scrape
// configuration that discovers tare agents in Kubernetes, the recording rules and their promtool tests, and
// the Grafana dashboard. Verbs that print or install them (tare agent manifest, the docs) and the tests that
// run them in a real Prometheus call it; it also derives a configuration with static targets from the shipped
// one, for a Prometheus that scrapes agents by address instead of through Kubernetes service discovery.
//
// It imports the embedded files (the deploy/prometheus package), Prometheus's model types and sigs.k8s.io/yaml,
// nothing else of tare's. A new shipped file goes under deploy/prometheus with an accessor here; the
// PromQL it shares with tare report --prometheus is internal/promread's (queries.go).
//
// Imports: deploy/prometheus
package promconf
