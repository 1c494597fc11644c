package archtest

import (
	"bytes"
	"go/build"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestImportRules holds every package of this module to the Imports line of its doc.go, for linux on
// amd64 and on arm64 (the architectures tare ships).
func TestImportRules(t *testing.T) {
	t.Parallel()
	root := moduleRoot(t)
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	module := modulePath(gomod)
	if module == "" {
		t.Fatalf("%s/go.mod names no module", root)
	}
	for _, arch := range []string{"amd64", "arm64"} {
		ctx := build.Default
		ctx.GOOS, ctx.GOARCH = "linux", arch
		pkgs, err := Load(&ctx, root, module)
		if err != nil {
			t.Fatal(err)
		}
		if len(pkgs) < 10 {
			t.Fatalf("found %d packages under %s: the walk is broken", len(pkgs), root)
		}
		for _, v := range Check(pkgs) {
			t.Errorf("linux/%s: %s", arch, v)
		}
	}
}

// modulePath is the path of go.mod's module line.
func modulePath(gomod []byte) string {
	for _, line := range strings.Split(string(gomod), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	return ""
}

// moduleRoot is the directory of the go.mod above the test's directory.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && bytes.Contains(b, []byte("module ")) {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}
