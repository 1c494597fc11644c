// Package testload provides real workloads for tests of known ground truth: a CPU burner regulated to an
// exact rate, a storm of short-lived children, and an idle process with arbitrary arguments. Test binaries
// re-execute themselves into these modes: call Main from TestMain. It also gives the ground truth itself:
// cgroups of the test's own (CPUCgroup, KubepodsCgroup) whose CPU the kernel accounts apart from the
// per-process counters tare reads, traced over time (TraceUsage; a pod's cgroup until it goes, TraceCgroup),
// and tare's own pprof endpoint (SelfPprof); and block I/O whose ground truth is fio's own report, in a pod
// cgroup (StartFioPod).
//
// It imports only testenv of tare's, and only tests import it. A new workload is a mode in testload.go (run
// by Main) with a starter in start.go.
//
// Imports: testenv
package testload
