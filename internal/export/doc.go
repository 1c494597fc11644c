// Package export writes a recording's time series as CSV, JSON or OpenMetrics, so it loads into pandas,
// Grafana or Prometheus (promtool tsdb create-blocks-from openmetrics).
//
// It owns the series a recording exports (one list of metric families, with their labels: each label
// means one thing on every metric) and the three encoders. It imports record, sample, summary and output (node
// busy comes from sample's BusyMeter, the one definition report uses too, so export and report agree). A new series is one entry in
// series.go; a new format is one encoder file.
//
// Imports: output, record, sample, summary
package export
