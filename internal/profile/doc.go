// Package profile samples the call stacks of every CPU with perf events and writes them as a pprof
// profile labelled with tare's groups.
//
// It opens one perf event per CPU (hardware cycles where the machine has them, else the cpu-clock software
// event) with kernel and user call chains (frame pointers), drains each CPU's mmap ring buffer with
// golang.org/x/sys/unix, names kernel frames from /proc/kallsyms and user frames from each binary's ELF
// symbol table, or a stripped Go binary's .gopclntab, and labels every sample with the process's group as
// internal/classify decides it, its pod, container and command. The perf binary is not needed.
//
// Naming is most of the cost, so it is done once per unique address and only at the end: while recording,
// a binary is only opened (through /proc/PID/map_files or /proc/PID/root, so that containers' and exited
// processes' binaries are found) and held open; Build then queues every address (Symbolizer.Want) and
// reads each binary's symbol table, and /proc/kallsyms, in one pass that keeps only the names of the
// symbols asked for (elfsyms.go, pclntab.go, kallsyms.go). No whole symbol table is decoded. The kernel
// image's symbols, which only a reboot changes, are kept per boot in tare's cache directory
// (kallsymscache.go): reading /proc/kallsyms is most of a short profile's cost.
//
// The profile verb (internal/cli/profile.go) calls Record (with Symbolizer.Prepare), then Build;
// Summarize and WriteTable make the table, GroupedByGroup the flame graph of the HTML report
// (internal/htmlreport/profile.go), Compare and WriteDiff tare profile diff. Readers of /proc take the
// procfs root and split into read and pure parse (parseKallsyms, parseMaps, parseRecord); /proc/PID/maps,
// which takes the process's memory-map lock, is read through kernel's blocking reader, with a deadline.
//
// It imports classify (groups), kernel (process identity, the blocking reader), pprof (top functions),
// output (rounding), userfile (a profile to compare is a regular file) and google/pprof's profile package; never client-go or the lab. A new record type of the ring goes in
// ring.go, a new source of symbols in symbols.go, a new label in build.go.
//
// Imports: classify, kernel, output, pprof, userfile
package profile
