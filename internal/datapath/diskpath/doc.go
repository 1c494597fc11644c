// Package diskpath is `tare datapath disk`: what storage costs a pod against the host on the same node.
// One fio job runs on a file of the same size on each target (a directory on the machine, a pod's
// overlayfs root, an emptyDir, a hostPath and a local PersistentVolume, all on the node's one file
// system), in trials that datapath's core interleaves, measures and compares with the host's.
//
// plan.go holds the targets, patterns and the plan; fio.go fio's command lines and its JSON report
// (pure); targets.go the pod, the local volume and the checks of each target's file system; compare.go
// fio's figures and the ratios against the host; run.go drives a run; result.go makes its
// datapath.Result.
//
// Imports: datapath, htmlreport, kernel, kube, session
package diskpath
