// Package testenv holds what tests share about the machine they run on: whether they may skip a test that
// needs root. Only tests import it.
//
// Imports: none
package testenv
