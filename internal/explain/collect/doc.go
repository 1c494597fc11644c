// Package collect gathers what tare explain reads besides the node's samples: it finds the sources (a
// cluster from a kubeconfig or a running lab, an audit log, pprof endpoints) and, around a live window or
// a recording, takes CPU profiles, reads the API view (audit log, or the API server's request counters)
// and the cluster's facts. Its Result turns into explain's Report.
//
// It lives apart from package explain so that the analysis, and the HTML report that draws it, do not
// import the lab, client-go or the recording store. The explain verb (internal/cli) calls Discover and
// then Collect, once; a new source of evidence goes here, as a goroutine of Collect's errgroup that reports
// failure as a note and returns when its context is cancelled.
//
// It imports explain (the types it fills, the cluster facts of facts.go among them), kube and lab (where
// the cluster and its endpoints are), client-go's meta types, pprof,
// audit, record, sample and summary.
//
// Imports: audit, explain, kube, lab, pprof, record, sample, summary
package collect
