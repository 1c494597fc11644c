// Package netpath is `tare datapath net`: what the pod network costs against the host on the same node.
// The same load generators (iperf3 for streams, sockperf for request/response, tare's own for
// connect-request-response and storage requests) run on the host and in pods, over each path (host
// loopback, a hostNetwork pod, pod to pod on one node, pod to pod across nodes routed and through VXLAN,
// a ClusterIP Service), in trials that datapath's core interleaves, measures and compares.
//
// plan.go holds the paths, modes, sizes and MTUs and the plan; tools.go the load generators' command
// lines and parse.go their outputs (pure); compare.go the metrics of each mode and which lane each path is
// set against; endpoints.go the pods, Service and host servers a run needs; run.go and trial.go drive a
// run and its trials; routemtu.go reads a route's MTU; result.go makes a run's datapath.Result.
//
// Imports: datapath, htmlreport, kernel, kube, session, stats, warning
package netpath
