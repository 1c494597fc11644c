// Package deploy builds the Kubernetes objects that run `tare agent` on every node of a cluster: its
// Namespace, ServiceAccount, the least RBAC it needs (reading pods, to name the pods of its node) and the
// DaemonSet itself, with the host's /proc and /sys mounted read-only, host PID and network namespaces, and
// requests set from tare's own measured cost.
//
// `tare agent manifest` prints what Objects returns; the lab (internal/lab) imports DefaultImage, the image
// the manifest runs by default, into its containerd, so the manifest applies to the lab as it is. The
// objects are typed k8s.io/api structs, serialised with sigs.k8s.io/yaml: what the API server decodes is
// what the tests check.
//
// The Helm chart deploy/helm/tare-agent renders the same objects (less the Namespace: Helm installs into
// one), plus the Prometheus Operator's PodMonitor and PrometheusRule on request; chart_test.go renders it
// with the real helm and compares it with Objects field by field, so a change to one fails until the other
// follows.
//
// It imports k8s.io/api and, of tare's, only output. A new object of the agent's deployment goes in Objects
// (with its test against what the API server accepts); a new output format next to encode.go.
//
// Imports: output
package deploy
