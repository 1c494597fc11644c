package archtest

import (
	"errors"
	"fmt"
	"go/build"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Load reads every package of the module whose root (the directory of go.mod) is root, with the build
// constraints of ctx: each one's imports of the module's packages and the rule of its doc.go.
// Directories named testdata or starting with "." or "_" are skipped, as the go command skips them.
func Load(ctx *build.Context, root, module string) ([]Package, error) {
	var pkgs []Package
	err := filepath.WalkDir(root, func(dir string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if name := d.Name(); dir != root && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
			return filepath.SkipDir
		}
		p, ok, err := loadDir(ctx, root, dir, module)
		if err != nil {
			return err
		}
		if ok {
			pkgs = append(pkgs, p)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the packages under %s: %w", root, err)
	}
	sort.Slice(pkgs, func(i, j int) bool { return pkgs[i].Path < pkgs[j].Path })
	return pkgs, nil
}

// loadDir reads the package in dir, if it has one with files for ctx (a directory of tests only has
// none that matter: its imports are tests').
func loadDir(ctx *build.Context, root, dir, module string) (Package, bool, error) {
	bp, err := ctx.ImportDir(dir, 0)
	if err != nil {
		var none *build.NoGoError
		if errors.As(err, &none) {
			return Package{}, false, nil
		}
		return Package{}, false, fmt.Errorf("reading the package in %s: %w", dir, err)
	}
	if len(bp.GoFiles)+len(bp.CgoFiles) == 0 {
		return Package{}, false, nil
	}
	rel, err := filepath.Rel(root, dir)
	if err != nil {
		return Package{}, false, fmt.Errorf("placing %s under %s: %w", dir, root, err)
	}
	p := Package{Path: filepath.ToSlash(rel), Command: bp.IsCommand()}
	for _, imp := range bp.Imports {
		if rest, ok := strings.CutPrefix(imp, module+"/"); ok {
			p.Imports = append(p.Imports, rest)
		}
	}
	doc := filepath.Join(dir, "doc.go")
	src, err := os.ReadFile(doc)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		p.RuleErr = fmt.Errorf("no doc.go: %w", ErrNoRule)
	case err != nil:
		return Package{}, false, fmt.Errorf("reading %s: %w", doc, err)
	default:
		p.Rule, p.RuleErr = ParseRule(filepath.ToSlash(filepath.Join(p.Path, "doc.go")), src)
	}
	return p, true, nil
}
