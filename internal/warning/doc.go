// Package warning holds the note tare attaches to a figure it cannot vouch for, the way benchstat prints a
// note under the number it concerns: a stable code a script can match, the figure it qualifies (the
// figure's JSON name), what the figure is of when a report has many (a variant, a node, a trial), what is
// wrong, and the likely cause. Every report's warnings are of this type — the summary's reconciliation, a
// comparison's verdicts and trials, the cluster view's nodes, a Prometheus read — so a table, the JSON and
// the HTML report print the same note beside the same figure.
//
// It imports only the standard library, so any package may use it. The codes of a report's warnings are
// declared in that report's package, next to the code that raises them; a helper every report needs (one
// line per warning, a warning from a plain message) goes here.
//
// Imports: none
package warning
