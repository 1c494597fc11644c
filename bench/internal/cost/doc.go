// Package cost reads what a process a benchmark started has cost: its CPU (the thread group's runtime from
// taskstats while it runs, rusage once it is waited for), its peak RSS, and the node's process count; and it
// stops such a process. The benches under bench/ call it, so that every bench counts CPU the same way.
//
// Imports: kernel
package cost
