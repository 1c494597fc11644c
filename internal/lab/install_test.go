package lab

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestBuildModule: the build module requires k8s.io/kubernetes at KubernetesVersion and points every staging
// module of its go.mod, and only those, at the release of the same minor version.
func TestBuildModule(t *testing.T) {
	t.Parallel()
	upstream := `module k8s.io/kubernetes

go 1.23.0

require (
	github.com/spf13/cobra v1.8.1
	k8s.io/api v0.0.0
)

replace (
	k8s.io/api => ./staging/src/k8s.io/api
	k8s.io/client-go => ./staging/src/k8s.io/client-go
	github.com/example/fork => github.com/example/other v1.0.0
)
`
	staging := "v0" + strings.TrimPrefix(KubernetesVersion, "v1")
	want := "module tarek8sbuild\n\ngo 1.23\n\nrequire k8s.io/kubernetes " + KubernetesVersion + "\n\nreplace (\n" +
		"\tk8s.io/api => k8s.io/api " + staging + "\n" +
		"\tk8s.io/client-go => k8s.io/client-go " + staging + "\n)\n"
	if diff := cmp.Diff(want, string(buildModule([]byte(upstream)))); diff != "" {
		t.Errorf("build module (-want +got):\n%s", diff)
	}
}

// TestBuildArgs: one go build for every component asked, into a directory (one binary each, named for its
// package), static and trimmed, without DWARF but with the symbol table, and each version variable stamped.
func TestBuildArgs(t *testing.T) {
	t.Parallel()
	var pkgs []string
	for _, name := range built {
		pkgs = append(pkgs, labOf(name).Module)
	}
	dir := filepath.Join(t.TempDir(), "out")
	args := buildArgs(dir, pkgs)
	if args[0] != "build" || !slices.Contains(args, "-trimpath") {
		t.Errorf("args %q: want a trimmed go build", args)
	}
	if diff := cmp.Diff(pkgs, args[len(args)-len(pkgs):]); diff != "" {
		t.Errorf("packages (-want +got):\n%s", diff)
	}
	if i := slices.Index(args, "-o"); i < 0 || args[i+1] != dir+"/" {
		t.Errorf("args %q: want -o %s/ (a directory: one binary per package)", args, dir)
	}
	i := slices.Index(args, "-ldflags")
	if i < 0 {
		t.Fatalf("args %q: no -ldflags", args)
	}
	ld := strings.Fields(args[i+1])
	if !slices.Contains(ld, "-w") || slices.Contains(ld, "-s") {
		t.Errorf("ldflags %q: want -w (no DWARF) and not -s (the symbol table profiles need)", ld)
	}
	minor := strings.Split(KubernetesVersion, ".")[1]
	for _, pkg := range []string{"k8s.io/component-base/version", "k8s.io/client-go/pkg/version"} {
		for _, v := range []string{"gitVersion=" + KubernetesVersion, "gitMajor=1", "gitMinor=" + minor} {
			if !slices.Contains(ld, pkg+"."+v) {
				t.Errorf("ldflags %q: %s.%s not stamped", ld, pkg, v)
			}
		}
	}
	for _, name := range built { // go build names a binary for its package: the component's program
		if p := labOf(name).Module; filepath.Base(p) != labOf(name).Program {
			t.Errorf("%s: package %s builds %s, not its program %s", name, p, filepath.Base(p), labOf(name).Program)
		}
	}
}
