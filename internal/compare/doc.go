// Package compare is tare's comparison: it turns observations of variants (an experiment's trials, or the
// blocks of two recordings) into results with medians, confidence intervals, Mann–Whitney tests and
// verdicts, as benchstat reports them, and renders those results as a table or JSON. It is pure: it runs
// nothing, reads no cluster and no file, and holds no state between calls.
//
// Who calls it: the experiment runner (internal/experiment) analyses its trials with Analyze and extracts
// each trial's metrics with Measure; tare diff (internal/cli) compares two recordings with Diff; the HTML
// report (internal/htmlreport) draws Results.
//
// What it may import: the statistics (internal/stats, gonum), a window's summary (internal/summary), the
// recording and sample types (internal/record, internal/sample), the session's warning type
// (internal/session), the warnings' type (internal/warning) and the component registry (internal/component, for the per-component metrics). It must not import internal/experiment, internal/lab, internal/kube or client-go:
// tare diff and the HTML report build without the lab and the Kubernetes client, and a test
// (TestImportsNoRunner) keeps it so.
//
// Where a new thing goes:
//   - a metric: its family in metrics.go (families, unit, Measure, and its rank in Order);
//   - a verdict or warning: verdicts in analyze.go, warnings about the run in warnings.go;
//   - anything of a sequential experiment's analysis (its Plan, the pairs by round, the looks and their
//     decisions): sequential.go;
//   - a renderer: a method of Results in render.go (the HTML page lives in internal/htmlreport);
//   - a new source of observations (as Diff cuts recordings into blocks): a file of its own that builds
//     Trials and a Design and calls Analyze.
//
// Imports: component, record, sample, session, stats, summary, warning
package compare
