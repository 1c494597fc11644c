// Package output holds how tare writes its results: indented JSON for machines, and the units its tables
// print numbers in (millicores, bytes) for people. Every report's JSON method and every table that shows
// CPU or memory calls it, so a figure reads the same in the summary, explain, cluster, density, promread and
// HTML reports.
//
// It imports only the standard library and nothing of tare's, so any package may use it. A new way of
// printing a figure that more than one report needs goes here; a format that only one report uses (a
// column layout, a sentence) stays with that report.
//
// Imports: none
package output
