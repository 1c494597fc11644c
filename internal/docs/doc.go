// Package docs holds the checks of tare's manual (README.md and docs/): its tests fail when a relative link
// or an #anchor in a page does not resolve. It has no code of its own; the CLI reference under docs/cli is
// generated and checked by internal/cli (WriteCLIDocs, TestCLIDocsFresh).
//
// Imports: none
package docs
