package lab

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/tare-dev/tare/internal/component"
)

// KubernetesVersion is the pinned upstream version tare builds.
const KubernetesVersion = "v1.32.4"

// ErrPrerequisite marks something missing from the machine that tare cannot install itself.
var ErrPrerequisite = errors.New("missing prerequisite")

// CacheDir is where built components live: $TARE_CACHE_DIR, else the user cache dir + /tare.
func CacheDir() (string, error) {
	if d := os.Getenv("TARE_CACHE_DIR"); d != "" {
		return d, nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("finding a cache directory (set TARE_CACHE_DIR): %w", err)
	}
	return filepath.Join(d, "tare"), nil
}

// k8sBinDir and kwokDir are where the built Kubernetes components and kwok (with its stages) are cached.
func k8sBinDir(cache string) string { return filepath.Join(cache, "k8s", KubernetesVersion, "bin") }
func kwokDir(cache string) string   { return filepath.Join(cache, "kwok", KwokVersion) }

// EnsureEtcd returns the path of etcd, installing Debian's etcd-server when it is missing and tare may.
func EnsureEtcd(ctx context.Context) (string, error) {
	etcd := labOf(component.Etcd)
	if p, err := exec.LookPath(etcd.Program); err == nil {
		return p, nil
	}
	if os.Geteuid() != 0 {
		return "", fmt.Errorf("etcd is not installed and installing it needs root: run sudo apt-get install %s: %w", etcd.Package, ErrPrerequisite)
	}
	if _, err := exec.LookPath("apt-get"); err != nil {
		return "", fmt.Errorf("etcd is not installed and there is no apt-get: install etcd 3.4+ and put it on PATH: %w", ErrPrerequisite)
	}
	if err := aptInstall(ctx, etcd.Package); err != nil {
		return "", err
	}
	return exec.LookPath(etcd.Program)
}

// labOf returns what the lab does with a component (the zero Lab for a name the registry lacks).
func labOf(name string) component.Lab {
	e, _ := component.Lookup(name)
	return e.Lab
}

// Build returns the path of an upstream component (kube-apiserver, kubelet, …) built from the
// k8s.io/kubernetes module at KubernetesVersion, building it into the cache the first time.
func Build(ctx context.Context, name string) (string, error) {
	l := labOf(name)
	if l.Source != component.SourceUpstream {
		return "", fmt.Errorf("%s is not a component tare builds from k8s.io/kubernetes (those are %s)", name,
			strings.Join(built, ", "))
	}
	cache, err := CacheDir()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(k8sBinDir(cache), l.Program)
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("building %s needs Go on PATH (https://go.dev/dl): %w", name, ErrPrerequisite)
	}
	dir := filepath.Join(cache, "k8s", KubernetesVersion, "build")
	if err := writeBuildModule(ctx, gobin, dir); err != nil {
		return "", err
	}
	v := KubernetesVersion
	minor := strings.Split(strings.TrimPrefix(v, "v"), ".")[1]
	var ld []string
	for _, pkg := range []string{"k8s.io/component-base/version", "k8s.io/client-go/pkg/version"} {
		ld = append(ld, "-X", pkg+".gitVersion="+v, "-X", pkg+".gitMajor=1", "-X", pkg+".gitMinor="+minor)
	}
	tmp := bin + ".tmp"
	if err := goCmd(ctx, gobin, dir, "build", "-trimpath", "-ldflags", strings.Join(ld, " "), "-o", tmp, l.Module); err != nil {
		return "", fmt.Errorf("building %s %s: %w", name, v, err)
	}
	return bin, os.Rename(tmp, bin)
}

// writeBuildModule makes a module that requires k8s.io/kubernetes and points each staging module (which
// its go.mod replaces with local paths) at the matching release.
func writeBuildModule(ctx context.Context, gobin, dir string) error {
	if _, err := os.Stat(filepath.Join(dir, "go.sum")); err == nil {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, gobin, "mod", "download", "-json", "k8s.io/kubernetes@"+KubernetesVersion)
	cmd.Dir, cmd.Stdout, cmd.Env = dir, &out, buildEnv()
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("downloading k8s.io/kubernetes %s: %w", KubernetesVersion, err)
	}
	var info struct{ GoMod string }
	if err := json.Unmarshal(out.Bytes(), &info); err != nil {
		return fmt.Errorf("reading go mod download output: %w", err)
	}
	upstream, err := os.ReadFile(info.GoMod)
	if err != nil {
		return fmt.Errorf("reading kubernetes go.mod: %w", err)
	}
	staging := "v0" + strings.TrimPrefix(KubernetesVersion, "v1")
	var b strings.Builder
	fmt.Fprintf(&b, "module tarek8sbuild\n\ngo 1.23\n\nrequire k8s.io/kubernetes %s\n\nreplace (\n", KubernetesVersion)
	for _, line := range strings.Split(string(upstream), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[1] == "=>" && strings.HasPrefix(f[2], "./staging/") {
			fmt.Fprintf(&b, "\t%s => %s %s\n", f[0], f[0], staging)
		}
	}
	b.WriteString(")\n")
	tools := "//go:build tools\n\npackage tools\n\nimport (\n"
	for _, name := range built {
		tools += "\t_ \"" + labOf(name).Module + "\"\n"
	}
	tools += ")\n"
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(b.String()), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "tools.go"), []byte(tools), 0o644); err != nil {
		return err
	}
	return goCmd(ctx, gobin, dir, "mod", "tidy")
}

func buildEnv() []string {
	// The checksum database does not know k8s.io/kubernetes; -mod=mod lets go resolve while building.
	return append(os.Environ(), "GONOSUMDB=k8s.io", "GOFLAGS=-mod=mod", "CGO_ENABLED=0")
}

func goCmd(ctx context.Context, gobin, dir string, args ...string) error {
	cmd := exec.CommandContext(ctx, gobin, args...)
	cmd.Dir, cmd.Env = dir, buildEnv()
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %s: %w\n%s", args[0], err, tail(out, 15))
	}
	return nil
}

// tail returns the last n lines of b.
func tail(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
