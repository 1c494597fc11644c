// Package summary turns a series of samples (live from the sampler, or read back from a recording) into
// the overhead summary tare prints: node CPU split by kind, per group and per process CPU with mean, p95
// and max, memory, disk, short-lived children credited to their parents, tare's own cost, and a
// reconciliation of the parts against the node total. It also renders that summary as a table or JSON.
//
// It imports sample (the samples and node busy's BusyMeter), stats, output, warning, blockio (the window's
// block I/O and its histograms) and bpfstats (tare's BPF time). Who calls it: measure,
// report and the agent print it; explain, compare, cluster and export build on it. A new figure goes in
// summary.go's types, filled in build.go and printed in render.go; a warning about the figures in
// warnings.go.
//
// Imports: blockio, bpfstats, output, sample, stats, warning
package summary
