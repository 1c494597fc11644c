// Package stats holds the descriptive statistics tare reports next to every number: n, mean, percentiles
// and maximum. It leans on gonum for the mathematics. The summary package calls it.
package stats
