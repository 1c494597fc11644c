// Package pprof fetches CPU profiles from Go components (kube-apiserver, etcd, kubelet, …) and turns them
// into a top-functions table and a flame graph. Profiles are parsed with google/pprof's profile package.
//
// It owns fetching (with the reason an endpoint refused), the top-functions table and the flame-graph
// layout (SVG, and the frames the HTML report draws). It imports only redact, bounded (a fetched profile is read within a bound) and output (rounding). Targets (which component
// at which URL with which client) are built by its callers (lab, kube, explain/collect).
//
// Imports: bounded, output, redact
package pprof
