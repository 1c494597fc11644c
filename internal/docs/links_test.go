package docs

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// root is the repository's root, from this package's directory.
const root = "../.."

// link is a Markdown inline link's target: [text](target) or [text](target "title").
var link = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)

// inlineCode is a code span, whose text is not Markdown.
var inlineCode = regexp.MustCompile("`[^`]*`")

// TestLinksResolve: every relative link in README.md and docs/**/*.md names a file or directory that
// exists, and every #anchor names a heading of its page, as GitHub makes anchors.
func TestLinksResolve(t *testing.T) {
	t.Parallel()
	pages := []string{filepath.Join(root, "README.md")}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
			pages = append(pages, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]map[string]bool{}
	anchorsOf := func(page string) map[string]bool {
		if a, ok := anchors[page]; ok {
			return a
		}
		a, err := pageAnchors(page)
		if err != nil {
			t.Errorf("reading %s: %v", page, err)
		}
		anchors[page] = a
		return a
	}
	n := 0
	for _, page := range pages {
		targets, err := pageLinks(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, tl := range targets {
			target := tl.target
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			n++
			file, anchor, _ := strings.Cut(target, "#")
			dest := page
			if file != "" {
				dest = filepath.Join(filepath.Dir(page), file)
				if _, err := os.Stat(dest); err != nil {
					t.Errorf("%s:%d: link %q: %v", rel(page), tl.line, target, err)
					continue
				}
			}
			if anchor == "" {
				continue
			}
			if !strings.HasSuffix(dest, ".md") {
				t.Errorf("%s:%d: link %q: an anchor into a file that is not Markdown", rel(page), tl.line, target)
				continue
			}
			if !anchorsOf(dest)[anchor] {
				t.Errorf("%s:%d: link %q: %s has no heading with anchor #%s", rel(page), tl.line, target, rel(dest), anchor)
			}
		}
	}
	if n < 50 {
		t.Errorf("only %d relative links found in %d pages: is the manual there?", n, len(pages))
	}
}

type pageLink struct {
	target string
	line   int
}

// pageLinks are the links of a Markdown page outside code blocks and code spans.
func pageLinks(page string) ([]pageLink, error) {
	f, err := os.Open(page)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var links []pageLink
	fenced := false
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for i := 1; sc.Scan(); i++ {
		line := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		for _, m := range link.FindAllStringSubmatch(inlineCode.ReplaceAllString(line, ""), -1) {
			links = append(links, pageLink{target: m[1], line: i})
		}
	}
	return links, sc.Err()
}

// pageAnchors are the anchors GitHub gives the headings of a Markdown page.
func pageAnchors(page string) (map[string]bool, error) {
	b, err := os.ReadFile(page)
	if err != nil {
		return nil, err
	}
	anchors := map[string]bool{}
	seen := map[string]int{}
	fenced := false
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced || !strings.HasPrefix(line, "#") {
			continue
		}
		text := strings.TrimLeft(line, "#")
		if len(text) == len(line) || text != "" && text[0] != ' ' {
			continue
		}
		a := Anchor(strings.TrimSpace(text))
		if k := seen[a]; k > 0 {
			anchors[a+"-"+strconv.Itoa(k)] = true
		} else {
			anchors[a] = true
		}
		seen[a]++
	}
	return anchors, nil
}

// Anchor is the anchor GitHub gives a heading: lower case, punctuation dropped (letters, digits, spaces,
// hyphens and underscores kept), each space a hyphen.
func Anchor(heading string) string {
	var sb strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			sb.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			sb.WriteRune(r)
		}
	}
	return sb.String()
}

func rel(p string) string {
	if r, err := filepath.Rel(root, p); err == nil {
		return r
	}
	return p
}

func TestAnchor(t *testing.T) {
	t.Parallel()
	for heading, want := range map[string]string{
		"Node busy":                  "node-busy",
		"tare's own cost":            "tares-own-cost",
		"/proc/stat busy":            "procstat-busy",
		"Memory: RSS, PSS, private":  "memory-rss-pss-private",
		"HTML report (`--html OUT`)": "html-report---html-out",
		"p-value and significance":   "p-value-and-significance",
		"Hodges–Lehmann shift":       "hodgeslehmann-shift",
		"`tare fit --pods N`":        "tare-fit---pods-n",
		"Which library does what":    "which-library-does-what",
		"tare_agent_manifest":        "tare_agent_manifest",
	} {
		if got := Anchor(heading); got != want {
			t.Errorf("Anchor(%q) = %q, want %q", heading, got, want)
		}
	}
}
