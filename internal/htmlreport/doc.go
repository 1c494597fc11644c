// Package htmlreport writes tare's results as one self-contained HTML file: tables rendered here, charts
// drawn in the browser by Apache ECharts, which is embedded in the binary and inlined into the page, so
// the file opens offline and fetches nothing.
//
// It owns the page template, the JSON the charts are drawn from (built in Go, one blob per page) and the
// embedded assets (assets/: ECharts with its licence, report.js, CSS). It imports summary, explain, compare,
// cluster, audit, pprof, profile and blockio (the bounds of its histograms' buckets) for the data it draws, output
// and stats for its figures, warning for the warnings it lists, userfile (the page is written whole and private), never lab, session or client-go's clientset. A new section of the node page goes
// in node.go with its chart in assets/report.js (the block I/O section, with its histograms, in blockio.go);
// experiment and diff pages are in experiment.go; datapath net and disk pages in datapath.go and
// datapathcharts.go, drawn from the plain DatapathRun (datapathrun.go) that datapath fills, so that this
// package does not import datapath's runner and its Kubernetes client; the tare density page in density.go
// and densitycharts.go, likewise drawn from the plain DensityRun (densityrun.go) that density fills.
// browsertest/ opens pages in headless Chromium for the tests.
//
// Imports: audit, blockio, cluster, compare, explain, output, pprof, profile, stats, summary, userfile, warning
package htmlreport
