package archtest

import (
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"strings"
)

// ErrNoRule is matched by the error of a doc.go whose package comment has no Imports line.
var ErrNoRule = errors.New("no Imports line in the package comment")

// rulePrefix starts the line of a package comment that lists the package's imports.
const rulePrefix = "Imports:"

// ParseRule reads the Imports line of a doc.go's package comment (src is the file's text, name its path
// for messages) and returns the names it lists, in order; "none" is the empty list.
func ParseRule(name string, src []byte) ([]string, error) {
	f, err := parser.ParseFile(token.NewFileSet(), name, src, parser.PackageClauseOnly|parser.ParseComments)
	if err != nil {
		return nil, fmt.Errorf("parsing %s: %w", name, err)
	}
	if f.Doc == nil {
		return nil, fmt.Errorf("%s: no package comment: %w", name, ErrNoRule)
	}
	var found []string
	lines := 0
	for _, line := range strings.Split(f.Doc.Text(), "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), rulePrefix)
		if !ok {
			continue
		}
		lines++
		names, err := parseNames(rest)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		found = names
	}
	switch lines {
	case 0:
		return nil, fmt.Errorf("%s: %w", name, ErrNoRule)
	case 1:
		return found, nil
	default:
		return nil, fmt.Errorf("%s: %d Imports lines, want one", name, lines)
	}
}

// parseNames splits the list after "Imports:": names separated by commas, or the word none.
func parseNames(list string) ([]string, error) {
	list = strings.TrimSuffix(strings.TrimSpace(list), ".")
	if list == "none" {
		return []string{}, nil
	}
	if list == "" {
		return nil, errors.New(`empty Imports line: list the packages, or write "none"`)
	}
	var names []string
	seen := map[string]bool{}
	for _, n := range strings.Split(list, ",") {
		n = strings.TrimSpace(n)
		switch {
		case n == "" || strings.ContainsAny(n, " \t"):
			return nil, fmt.Errorf("imports line %q: want package paths separated by commas", list)
		case n == "none":
			return nil, fmt.Errorf("imports line %q: none with other names", list)
		case seen[n]:
			return nil, fmt.Errorf("imports line %q: %s twice", list, n)
		}
		seen[n] = true
		names = append(names, n)
	}
	return names, nil
}
