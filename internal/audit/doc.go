// Package audit streams kube-apiserver audit logs (JSON lines) and counts requests per client, verb,
// resource and namespace, without ever holding the log in memory.
//
// It owns the audit-event model, the streaming reader (chunked, on every CPU, bounded memory; a bad line is
// counted and skipped with its line number, never echoed) with the counts by client, verb, resource and
// namespace (stream.go, report.go), and kube-apiserver's request metrics for when there is no audit log
// (metrics.go). It imports only redact, userfile (an audit log is a regular file) and output (rounding). A new count over audit events goes in the aggregator
// (report.go); a new input format gets its own reader file beside stream.go.
//
// Imports: output, redact, userfile
package audit
