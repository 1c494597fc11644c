// Package browsertest opens an HTML report in a real headless Chromium (Debian's chromium package,
// driven over the DevTools protocol by chromedp) and reports what a reader would see: the charts drawn,
// their text, console errors and exceptions, any request that left the file, and a screenshot. Tests
// only.
//
// It imports nothing of tare's. A new check of what a reader sees (a chart, a console message) goes in
// browser.go, failing on anything a reader would notice.
//
// Imports: none
package browsertest
