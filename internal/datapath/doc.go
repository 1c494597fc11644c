// Package datapath measures what the pod network costs against the host on the same node: the same load
// generators (iperf3 for streams, sockperf for request/response), run on the host and in pods, over each
// path (host loopback, a hostNetwork pod, pod to pod on one node, pod to pod across nodes routed and
// through VXLAN, a ClusterIP Service), in trials interleaved across paths; the measuring session runs
// during every trial, so each result carries the CPU it cost the node and each group. Each path is then
// compared with the host baseline: a ratio with a 95% interval (Hodges–Lehmann on the logarithms of the
// trials) and a Mann–Whitney p-value. `tare datapath net` calls it.
//
// plan.go holds the paths, modes and sizes and orders the trials; tools.go the load generators' command
// lines and parse.go their outputs (pure); compare.go the ratios against the baseline; endpoints.go the
// pods, Service and host servers a run needs; run.go drives a run; render.go prints it.
package datapath
