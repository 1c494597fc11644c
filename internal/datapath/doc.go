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
// plan.go holds the paths, modes and sizes and orders the trials; tools.go the load generators' command
// lines and parse.go their outputs (pure); compare.go the ratios against the baseline; endpoints.go the
// pods, Service and host servers a run needs; run.go drives a run; render.go prints it. For disk:
// diskplan.go the targets, patterns and the plan; fio.go fio's command lines and its JSON report (pure);
// disktargets.go the pod, the local volume and the checks of each target's file system; diskcompare.go,
// diskrun.go and diskrender.go compare, drive and print a disk run. htmlview.go gives either run as its
// HTML page shows it (htmlreport.DatapathRun).
//
// Imports: htmlreport, kernel, kube, output, session, stats, summary, warning
package datapath
