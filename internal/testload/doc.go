// Package testload provides real workloads for tests of known ground truth: a CPU burner regulated to an
// exact rate, a storm of short-lived children, and an idle process with arbitrary arguments. Test binaries
// re-execute themselves into these modes: call Main from TestMain.
package testload
