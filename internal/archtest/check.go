package archtest

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Package is one package of the module as the check sees it. Paths are relative to the module's root
// (internal/kernel, cmd/tare).
type Package struct {
	Path    string
	Command bool     // package main: a leaf, no rule needed
	Imports []string // the module's packages it imports, test files left out
	Rule    []string // the names of its Imports line, as written
	RuleErr error    // why it has no rule (no doc.go, no line, a malformed line)
}

// Violation is one way a package and its rule disagree.
type Violation struct {
	Package string
	Problem string
}

func (v Violation) String() string { return v.Package + ": " + v.Problem }

// Check compares every package's imports with its rule and returns what disagrees, sorted by package.
// A name in a rule is resolved as internal/<name> when the module has that package, else as <name>.
func Check(pkgs []Package) []Violation {
	known := map[string]bool{}
	for _, p := range pkgs {
		known[p.Path] = true
	}
	var out []Violation
	add := func(pkg, format string, args ...any) {
		out = append(out, Violation{Package: pkg, Problem: fmt.Sprintf(format, args...)})
	}
	for _, p := range pkgs {
		if p.Command {
			continue
		}
		if p.RuleErr != nil {
			add(p.Path, "%v: add the line \"// Imports: %s\" to its doc.go", p.RuleErr, Names(p.Imports))
			continue
		}
		allowed := map[string]bool{}
		for _, n := range p.Rule {
			path, ok := resolve(n, known)
			if !ok {
				add(p.Path, "its Imports line names %s, which is no package of the module", n)
				continue
			}
			allowed[path] = true
			if !slices.Contains(p.Imports, path) {
				add(p.Path, "its Imports line names %s, which it does not import: take it out of the line", n)
			}
		}
		for _, imp := range p.Imports {
			if !allowed[imp] {
				add(p.Path, "imports %s, which its Imports line does not allow", imp)
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Package < out[j].Package })
	return out
}

// resolve turns a rule's name into a package path of the module.
func resolve(name string, known map[string]bool) (string, bool) {
	if p := "internal/" + name; known[p] {
		return p, true
	}
	return name, known[name]
}

// Names writes paths as an Imports line lists them: relative to internal/ where they are under it, sorted,
// separated by commas; "none" for no path.
func Names(paths []string) string {
	if len(paths) == 0 {
		return "none"
	}
	names := make([]string, len(paths))
	for i, p := range paths {
		names[i] = strings.TrimPrefix(p, "internal/")
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}
