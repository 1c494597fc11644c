// Package promtest runs a real Prometheus server (Debian's prometheus package) for tests, and serves fake
// tare agents whose counters advance at known rates, so that what Prometheus computes can be checked against
// a ground truth that does not come from the code under test. Only tests import it.
//
// Imports: lab, lab/labtest, promconf, testenv
package promtest
