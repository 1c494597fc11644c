// Package promread reads tare agents' figures back from Prometheus through its HTTP API: node busy and CPUs,
// each group's CPU and memory, tare's own cost, the control plane and per-pod CPU. `tare report --prometheus`
// calls it. The PromQL it sends is built in one place (queries.go), and the shipped recording rules
// (deploy/prometheus/rules.yml) are the same expressions over a one-minute window, which a test checks. Reading
// (read.go) is split from mapping the API's vectors to a Report (mapping.go), which is pure.
//
// It imports classify and component (which groups are the control plane, the kubelet and the runtime),
// output, bounded (every answer read within a bound), and Prometheus's API client; never client-go. A new figure is a query in queries.go (and its
// recording rule in deploy/prometheus/rules.yml), mapped in mapping.go and drawn in render.go.
//
// Imports: bounded, classify, component, output, warning
package promread
