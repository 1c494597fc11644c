// Package datapath measures what the pod network costs against the host on the same node: the same load
// generators (iperf3 for streams, sockperf for request/response), run on the host and in pods, over each
// path (host loopback, a hostNetwork pod, pod to pod on one node, pod to pod across nodes routed and
// through VXLAN, a ClusterIP Service), in trials interleaved across paths; the measuring session runs
// during every trial, so each result carries the CPU it cost the node and each group. Each path is then
// compared with the host baseline: a ratio with a 95% interval (Hodges–Lehmann on the logarithms of the
// trials) and a Mann–Whitney p-value. `tare datapath net` calls it.
//
// The disk side does the same for storage: one fio job on a file of the same size on each target (a
// directory on the machine, a pod's overlayfs root, an emptyDir, a hostPath and a local PersistentVolume,
// all on the node's one file system), compared with the host's. `tare datapath disk` calls it.
//
// The two verbs are two users of one core, whose files have no prefix: lanes.go the trial slots, their
// interleaved order and the plan's cross product of places and settings; runs.go a run's schedule, its
// rounds of trials run in turn and said, the node's usage over a trial and the pods' nodes; shift.go the
// figures a trial yields (name, title, unit, which way is better) and the comparison of a lane's trials
// with its baseline's; result.go the Result both renderers read (pure: no I/O), resulttable.go its text
// table and resultview.go its HTML page's view (htmlreport.DatapathRun, the one place that fills it).
//
// The net verb's files start with net: netplan.go the paths, modes, sizes and MTUs and the plan;
// nettools.go the load generators' command lines and netparse.go their outputs (pure); netcompare.go the
// metrics of each mode and which lane each path is set against; netendpoints.go the pods, Service and
// host servers a run needs; netrun.go and nettrial.go drive a run and its trials; netroutemtu.go reads a
// route's MTU; netresult.go makes a run's Result. The disk verb's start with disk: diskplan.go the
// targets, patterns and the plan; diskfio.go fio's command lines and its JSON report (pure);
// disktargets.go the pod, the local volume and the checks of each target's file system; diskcompare.go
// fio's figures and the ratios against the host; diskrun.go drives a run; diskresult.go makes its Result.
//
// Imports: htmlreport, kernel, kube, output, session, stats, summary, warning
package datapath
