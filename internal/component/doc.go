// Package component is tare's one registry of the Kubernetes components it knows: for each, the name its
// processes are reported under, the programs that are it (how a process is recognised from its executable,
// comm and command line), its role in a cluster, the port where it serves /metrics and /debug/pprof, its
// leader-election lease, and what tare's lab does with it (built from the upstream module, installed from a
// Debian package or with go install, run as a daemon, tunable with --set, part of the node). The table's
// order is the order reports list components in.
//
// The sampler's classifier, the lab (install, binaries, pprof targets, --set, cleanup), explain's rules,
// experiments and benchmarks read it; none of them keeps a list of its own.
//
// It imports nothing of tare's, so any package may import it.
//
// Adding a component is one entry in registry.go. Code that needs one particular component by name uses the
// name constants in names.go rather than a string literal.
//
// Imports: none
package component
