// Package testenv holds what tests share about the machine they run on: whether they may skip a test that
// needs root, how much slower than a real machine it runs (an emulated VM), and golden files (Golden).
// Only tests import it.
//
// Imports: none
package testenv
