// Package cluster is tare's cluster view (tare cluster measure): it finds the tare agents of a cluster
// through the API server, reads each node's /summary over one trailing window from the agent at its node's
// address (over TLS, with the caller's own credentials), and folds them into per-node rows and cluster totals: control plane, kubelet and runtime,
// per-pod overhead (the runtime's shims, pause and CNI per running pod), workload pods, add-ons,
// kernel threads, other processes and tare itself. A node whose agent is missing, unready or
// unreachable is a row that says so. Nodes that share one kernel (a one-machine lab, kind) are found by
// their boot ID and counted once where they share what they measure.
//
// The package is pure (no client-go: the HTML report reads its View): view.go and categories.go build the
// view from the agents' summaries, table.go prints it; internal/cluster/agents reads them through the
// API server.
//
// It imports summary (the agents' payload), classify and component (which category a group falls in),
// stats and output; never client-go or kube. A new category is one entry in categories.go; a new column of
// the table goes in table.go and, when the HTML page shows it, in internal/htmlreport/cluster.go.
//
// Imports: classify, component, output, stats, summary
package cluster
