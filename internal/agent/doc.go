// Package agent is tare's long-running mode (tare agent, issue 17): it samples the node continuously with
// the same measuring session as tare measure (internal/session driving internal/sample's Sampler) and
// serves what it sees over HTTP: /metrics in the Prometheus and OpenMetrics text formats (names, types and
// labels are a contract that the shipped Prometheus rules and tare report --prometheus rely on: see the
// "tare agent" section of docs/guides/deploy-the-agent.md), /summary as the JSON of tare measure -o json over a trailing window (built
// by internal/summary), and /healthz.
//
// It owns the agent's state and its bounds:
//   - state.go: a fixed-size ring of the last --window / --interval samples, the processes those samples
//     name or that still live (their identity redacted once, with internal/redact), and the counters, which
//     are cumulative since the agent started and updated on every sample;
//   - window.go: a trailing window of the ring rebuilt as a series summary.Build accepts;
//   - collector.go: the Prometheus collector, with bounded cardinality (groups and pods always, only the
//     top N processes, series of groups gone for longer than the window deleted);
//   - server.go: the HTTP server and the loop that ties the session to it; options.go: its options and
//     the stated memory bound;
//   - access.go: who may read what beyond loopback (issue 35): callers checked as the kubelet checks them,
//     a client certificate of the cluster's CA or a bearer token by TokenReview, then their right to get
//     the path by SubjectAccessReview, both cached and the reviews bounded; tls.go: the serving
//     certificate (mounted, or made at start); exposure.go: /summary without command lines unless asked;
//   - limits.go: what callers can take from the server: timeouts, the header bound, GET only, a cap on
//     open connections that keeps accepting, and slots for the expensive handlers.
//
// It imports internal/session, internal/sample, internal/summary, internal/classify (the group kinds of its
// labels), internal/redact, internal/blockio (the block I/O series), internal/bpfstats (tare's BPF time), prometheus/client_golang, and client-go's typed review clients and its
// certificate helper (the reviews' clients are built by internal/kube and handed in through Access);
// internal/cli's agent verb is its only caller. A
// new metric goes in collector.go, with its state in state.go; its name and labels are then part of the
// contract (the table in docs/guides/deploy-the-agent.md, and deploy/prometheus when the rules use it).
//
// Imports: blockio, bpfstats, classify, redact, sample, session, summary
package agent
