// Package experiment runs A/B (and sweep) experiments on a cluster: variants of component flags or
// replica counts, trials interleaved in random order, a user-experience guard in every trial, every
// trial's window measured and recorded, and the finished trials kept in an experiment file so an
// interrupted experiment continues with --resume.
//
// What it owns: the spec (spec.go: the YAML file and its checks), the plan and the experiment file
// (store.go), the runner (run.go: the lab or the commands target, the window; manifests.go, install.go,
// daemonsets.go, helm.go: what a variant installs, its DaemonSets waited on and their cost; runcmd.go: a variant's run
// command; leftovers.go: the environment mark of its processes, the leftovers of a killed tare and the
// experiment's job for lab's reaper, the child process that cleans up after a killed tare; concurrent.go: a round's variants at once on shares of the replicas), the guard (guard.go: a Deployment reached through its Service, API latency) and a sequential
// experiment's planning and stopping (sequential.go: the pilot, the rounds, the budget, the stop). The
// comparison of the trials (medians, intervals, Mann–Whitney tests, the sequential looks, verdicts, table
// and JSON) is internal/compare's: Analyze here only hands the spec's design (and plan) to compare.Analyze,
// and Trial, Results and Plan are compare's types.
//
// What it may import: compare, the lab (and lab/images, the guard's web image), kube and client-go, session
// (the measuring session), record (the shared check of tare's SQLite files), summary, sample, audit (the API
// request rate), progress, userfile (a spec is a regular file, read within a bound), stats (rounds, the labs'
// effect, the sequential bounds), component (the registry's names) and kernel (/proc/stat and the process
// list).
// Nothing but the CLI imports it; tare diff and the HTML report must not (they use compare).
//
// Where a new thing goes: a spec field in spec.go (checked in check, stored with the spec), a guard in
// guard.go with its metric name in compare's metrics.go, a target next to the lab and commands targets in
// run.go. A new metric, verdict or renderer belongs in internal/compare.
//
// Imports: audit, compare, component, kernel, kube, lab, lab/images, progress, record, sample, session, stats, summary, userfile
package experiment
