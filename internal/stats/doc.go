// Package stats holds the statistics tare reports next to every number: n, mean, percentiles and maximum
// (describe.go), a percentile with its distribution-free order-statistic interval and the n it needs
// (quantile.go), medians with distribution-free intervals, the Mann–Whitney test with the Hodges–Lehmann
// shift and the smallest detectable change (rank.go), the Wilcoxon signed-rank test of paired differences
// (signedrank.go), group-sequential bounds with Lan–DeMets alpha spending, their power and the looks'
// repeated intervals (sequential.go), the estimate of differences with a nuisance level by phase
// (phases.go) and of a variant's effect on each lab from every lab's value in every round, two-way fixed
// effects (labs.go), the pairs a paired comparison needs and exact binomial intervals (power.go),
// comparisons of two sets (compare.go), and shuffled rounds of trials (rounds.go). It leans on
// gonum for the mathematics and imports nothing of tare's. summary, compare, cluster, density and datapath
// call it; the benchmarks use the same functions.
//
// A new statistic goes in the file of its family, tested against values worked out by hand in the test or
// against an independent implementation: testdata/gen.py captures scipy's, statsmodels' and gsDesign's
// figures into testdata/paired_sequential.json (gen_phase.py and gen_labs.py those of phases.go and
// labs.go).
//
// Imports: none
package stats
