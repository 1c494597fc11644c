package archtest

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseRule(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, src string
		want      []string
		err       string
	}{
		{"list", "// Package a is a.\n//\n// Imports: kernel, stats, output\npackage a\n", []string{"kernel", "stats", "output"}, ""},
		{"full stop", "// Package a is a.\n// Imports: cluster/agents, deploy/prometheus.\npackage a\n", []string{"cluster/agents", "deploy/prometheus"}, ""},
		{"none", "// Package a is a.\n//\n// Imports: none\npackage a\n", []string{}, ""},
		{"no line", "// Package a imports kernel.\npackage a\n", nil, "no Imports line"},
		{"no comment", "package a\n", nil, "no package comment"},
		{"detached comment", "// Imports: kernel\n\npackage a\n", nil, "no package comment"},
		{"empty", "// Imports:\npackage a\n", nil, "empty Imports line"},
		{"spaces", "// Imports: kernel stats\npackage a\n", nil, "separated by commas"},
		{"twice", "// Imports: kernel, kernel\npackage a\n", nil, "kernel twice"},
		{"none and more", "// Imports: none, kernel\npackage a\n", nil, "none with other names"},
		{"two lines", "// Imports: kernel\n// Imports: stats\npackage a\n", nil, "2 Imports lines"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseRule("a/doc.go", []byte(tc.src))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("ParseRule error = %v, want one containing %q", err, tc.err)
				}
				if strings.Contains(tc.err, "no ") && !errors.Is(err, ErrNoRule) {
					t.Errorf("ParseRule error %v does not match ErrNoRule", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseRule: %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ParseRule (-want +got):\n%s", diff)
			}
		})
	}
}

// fixture is a small module: kernel and stats at the bottom, sample over kernel, a command on top.
func fixture() []Package {
	return []Package{
		{Path: "cmd/tool", Command: true, Imports: []string{"internal/sample", "internal/stats"}},
		{Path: "deploy/files", Rule: []string{}},
		{Path: "internal/kernel", Rule: []string{}},
		{Path: "internal/sample", Imports: []string{"internal/kernel"}, Rule: []string{"kernel"}},
		{Path: "internal/stats", Rule: []string{}},
		{Path: "internal/conf", Imports: []string{"deploy/files"}, Rule: []string{"deploy/files"}},
	}
}

func TestCheck(t *testing.T) {
	t.Parallel()
	edit := func(f func(pkgs []Package)) []Package {
		pkgs := fixture()
		f(pkgs)
		return pkgs
	}
	for _, tc := range []struct {
		name string
		pkgs []Package
		want []string
	}{
		{"agrees", fixture(), nil},
		{"gains an import", edit(func(p []Package) { p[3].Imports = append(p[3].Imports, "internal/stats") }),
			[]string{"internal/sample: imports internal/stats, which its Imports line does not allow"}},
		{"drops an import", edit(func(p []Package) { p[3].Imports = nil }),
			[]string{"internal/sample: its Imports line names kernel, which it does not import: take it out of the line"}},
		{"names no package", edit(func(p []Package) { p[4].Rule = []string{"kernal"} }),
			[]string{"internal/stats: its Imports line names kernal, which is no package of the module"}},
		{"no rule", edit(func(p []Package) { p[3].Rule, p[3].RuleErr = nil, ErrNoRule }),
			[]string{`internal/sample: no Imports line in the package comment: add the line "// Imports: kernel" to its doc.go`}},
		{"a command needs none", edit(func(p []Package) { p[0].Imports = append(p[0].Imports, "internal/kernel") }), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var got []string
			for _, v := range Check(tc.pkgs) {
				got = append(got, v.String())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Check (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNames(t *testing.T) {
	t.Parallel()
	if got, want := Names([]string{"internal/stats", "deploy/prometheus", "internal/cluster/agents"}), "cluster/agents, deploy/prometheus, stats"; got != want {
		t.Errorf("Names = %q, want %q", got, want)
	}
	if got := Names(nil); got != "none" {
		t.Errorf("Names(nil) = %q, want none", got)
	}
}
