// Package summary turns a series of samples (live from the sampler, or read back from a recording) into
// the overhead summary tare prints: node CPU split by kind, per group and per process CPU with mean, p95
// and max, memory, disk, short-lived children credited to their parents, tare's own cost, and a
// reconciliation of the parts against the node total. It also renders that summary as a table or JSON.
package summary
