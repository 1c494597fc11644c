package lab

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/tare-dev/tare/internal/output"
)

// HelmVersion is the Helm release tare builds from its Go module, to install the agent's chart
// (deploy/helm/tare-agent) on the lab and to lint and render it in the tests.
const HelmVersion = "v3.22.0"

const helmModule = "helm.sh/helm/v3/cmd/helm"

func helmDir(cache string) string { return filepath.Join(cache, "helm", HelmVersion, "bin") }

// HelmBin returns the path of helm at HelmVersion if it is in the cache, else "".
func HelmBin() string {
	cache, err := CacheDir()
	if err != nil {
		return ""
	}
	p := filepath.Join(helmDir(cache), "helm")
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}

// InstallHelm builds helm at HelmVersion into the cache unless it is there (a few minutes; it needs go and
// the module proxy), and returns it as a Component.
func InstallHelm(ctx context.Context) (Component, error) {
	start := time.Now()
	c := Component{Name: "helm", Version: HelmVersion, Source: "cached"}
	cache, err := CacheDir()
	if err != nil {
		return c, err
	}
	dir := helmDir(cache)
	c.Path = filepath.Join(dir, "helm")
	if _, err := os.Stat(c.Path); err == nil {
		c.Took = time.Since(start)
		return c, nil
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		return c, fmt.Errorf("building helm %s needs go on PATH: %w", HelmVersion, ErrPrerequisite)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return c, fmt.Errorf("creating %s: %w", dir, err)
	}
	// go install into a directory of its own, renamed into place: two test binaries may build at once.
	tmp, err := os.MkdirTemp(dir, "build-*")
	if err != nil {
		return c, fmt.Errorf("building helm: %w", err)
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	cmd := exec.CommandContext(ctx, gobin, "install", "-trimpath", helmModule+"@"+HelmVersion)
	// Outside any module (the cache, not the caller's directory): the build must not touch a go.sum.
	cmd.Dir, cmd.Env = dir, append(buildEnv(), "GOBIN="+tmp, "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		return c, fmt.Errorf("go install helm %s: %w\n%s", HelmVersion, err, output.LastLines(out, 10))
	}
	if err := os.Rename(filepath.Join(tmp, "helm"), c.Path); err != nil {
		return c, fmt.Errorf("installing helm: %w", err)
	}
	c.Source, c.Took = "built", time.Since(start)
	return c, nil
}
