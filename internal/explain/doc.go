// Package explain finds where a node's overhead comes from: spikes and their period, pollers, idle gaps
// between bursts, API clients, profiles, the USE view, and ranked findings with a change for each.
//
// It owns the analyses over a summary and its samples (spikes, periods, pollers, sawtooth, USE view), the
// findings and their rules (findings.go: one function per rule, called from Findings; a new rule is one
// function there, ranked by estimated CPU, with evidence, a change and how to verify it) and their rendering (table, JSON). It
// reads; it never measures: what explain collects from the node and the cluster (profiles, API view,
// cluster facts) lives in explain/collect. It may import summary, sample (the sample model), kernel
// (resource types), audit, pprof, stats, component and output; never kube, cli, lab or session: the cluster facts
// it reads are its own plain type (ClusterFacts), which explain/collect fills.
//
// Imports: audit, component, kernel, output, pprof, sample, stats, summary
package explain
