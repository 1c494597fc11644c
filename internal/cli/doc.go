// Package cli wires tare's verbs (cobra commands) to the domain packages. Every verb is a function of a
// context, arguments and streams, so tests run the whole CLI in-process. It holds no measurement logic.
//
// It may import every domain package and cobra; only cmd/tare imports it. A new verb is a file named for it
// holding newVerb(s, g) (flags into an options value, no globals) registered in newRoot (root.go); it
// parses and checks its flags, returning usageError for bad ones (exit status 2), calls the domain
// packages, and prints through render (render.go), so -o json and -o table mean the same everywhere.
//
// docs/cli, the CLI reference, is generated from these commands (clidocs.go, make docs) and checked by
// TestCLIDocsFresh: run make docs after changing a command or flag. A verb that prints figures ends its
// Long help with figuresHelp, and its figures are defined in docs/figures.md.
//
// A verb that needs a cluster finds it through globalOptions.cluster (kubeconfig.go): kubectl's lookup
// (--kubeconfig, --context, $KUBECONFIG, ~/.kube/config), else a running lab's kubeconfig, and connects
// with kube.NewClient. Run as kubectl-tare, tare is kubectl's plugin (ExecuteAs, plugin.go).
//
// Imports: agent, cluster/agents, compare, datapath, datapath/diskpath, datapath/netpath, density, deploy, experiment, explain, explain/collect, export, fit, htmlreport, kube, lab, lab/images, output, profile, progress, promconf, promread, record, redact, sample, session, summary, userfile
package cli
