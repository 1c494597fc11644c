// Package datapath is the core of the two data-path verbs: each measures what a place costs against a
// baseline on the same node, in trials interleaved across places, with the measuring session running
// during every trial, so each result carries the CPU it cost the node and each group. Each place is then
// compared with its baseline: a ratio with a 95% interval (Hodges–Lehmann on the logarithms of the trials)
// and a Mann–Whitney p-value.
//
// Its two users are sub-packages: netpath (`tare datapath net`: the pod network against the host, over
// each path, with iperf3 and sockperf) and diskpath (`tare datapath disk`: storage, one fio job on a file
// on each target against the host's). Neither imports the other, and this package imports neither.
//
// lanes.go holds the trial slots, their interleaved order and the plan's cross product of places and
// settings; runs.go a run's schedule, its rounds of trials run in turn and said, the node's usage over a
// trial, the pods' nodes and their role label; shift.go the figures a trial yields (name, title, unit,
// which way is better) and the comparison of a lane's trials with its baseline's; result.go the Result
// both renderers read (pure: no I/O), resulttable.go its text table and resultview.go its HTML page's
// view (htmlreport.DatapathRun, the one place that fills it).
//
// Imports: htmlreport, kube, output, session, stats, summary, warning
package datapath
