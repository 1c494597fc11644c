package htmlreport

import (
	"os"
	"strings"
	"testing"
	"unicode"
)

// TestFigureDocsAnchors: every figure a report links to has its heading in docs/figures.md, under the
// anchor GitHub gives it.
func TestFigureDocsAnchors(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../docs/figures.md")
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		if text, ok := strings.CutPrefix(strings.TrimLeft(line, "#"), " "); ok && strings.HasPrefix(line, "#") {
			have[githubAnchor(text)] = true
		}
	}
	for _, m := range []map[string]string{sectionFigures, cardFigures} {
		for key, anchor := range m {
			if !have[anchor] {
				t.Errorf("%q links to docs/figures.md#%s, which has no such heading", key, anchor)
			}
		}
	}
	if got := sectionDoc("busy"); got != DocsBase+"#node-busy" {
		t.Errorf("sectionDoc(busy) = %q", got)
	}
	if got := cardDoc("warning"); got != "" {
		t.Errorf("cardDoc(warning) = %q, want no link", got)
	}
}

// githubAnchor is the anchor GitHub gives a heading (internal/docs checks the manual's links with the same
// rule).
func githubAnchor(heading string) string {
	var sb strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			sb.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			sb.WriteRune(r)
		}
	}
	return sb.String()
}
