// Package archtest checks tare's import rules. Every package's doc.go states, in a line of its package
// comment, the packages of this module it imports:
//
//	// Imports: kernel, stats, output
//
// Each name is an import path inside the module, relative to internal/ when such a package exists and to
// the module's root otherwise (deploy/prometheus); "none" says it imports nothing of the module. The test
// TestImportRules (run by make test and make lint) lists every package of the module with go/build and
// fails when a package's module-internal imports (test files left out) and its line differ either way: an
// import the line does not list breaks a rule, a listed package it no longer imports makes the doc stale.
// A command (package main: cmd/tare, bench/*, scripts/*, the lab's image programs) is a leaf nobody
// imports and needs no line; a package without a doc.go, or without the line, fails.
//
// rules.go parses the line, check.go compares (pure, tested on fixtures), module.go reads the module.
// Changing a package's imports means changing its line (and the prose of its doc.go that says why).
//
// Imports: none
package archtest
