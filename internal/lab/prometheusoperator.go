package lab

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/tare-dev/tare/internal/userfile"
)

// PrometheusOperatorVersion is the release of the Prometheus Operator the agent's chart is checked against:
// its CustomResourceDefinitions (PodMonitor, PrometheusRule, ...), which ship in its Go module under
// example/prometheus-operator-crd, and the operator itself, built from the module, which turns the chart's
// PodMonitor and PrometheusRule into a Prometheus configuration on the lab.
const PrometheusOperatorVersion = "v0.85.0"

const prometheusOperatorModule = "github.com/prometheus-operator/prometheus-operator"

func prometheusOperatorDir(cache string) string {
	return filepath.Join(cache, "prometheus-operator", PrometheusOperatorVersion, "bin")
}

// prometheusOperatorSource downloads the operator's module into Go's module cache, once, and returns its
// directory.
func prometheusOperatorSource(ctx context.Context) (string, error) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("getting the Prometheus Operator %s needs go on PATH: %w", PrometheusOperatorVersion, ErrPrerequisite)
	}
	cache, err := CacheDir()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return "", fmt.Errorf("creating %s: %w", cache, err)
	}
	var out bytes.Buffer
	version := prometheusOperatorModule + "@" + PrometheusOperatorVersion
	cmd := exec.CommandContext(ctx, gobin, "mod", "download", "-json", version)
	// Outside any module: the download must not touch a go.sum.
	cmd.Dir, cmd.Stdout, cmd.Env = cache, &out, append(buildEnv(), "GOWORK=off")
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("downloading %s: %w", version, err)
	}
	var info struct{ Dir string }
	if err := json.Unmarshal(out.Bytes(), &info); err != nil {
		return "", fmt.Errorf("reading go mod download output: %w", err)
	}
	return info.Dir, nil
}

// PrometheusOperatorCRDs returns the paths of the operator's CRD manifests at PrometheusOperatorVersion,
// downloading its module the first time.
func PrometheusOperatorCRDs(ctx context.Context) ([]string, error) {
	src, err := prometheusOperatorSource(ctx)
	if err != nil {
		return nil, err
	}
	crds, err := filepath.Glob(filepath.Join(src, "example", "prometheus-operator-crd", "monitoring.coreos.com_*.yaml"))
	if err != nil {
		return nil, fmt.Errorf("finding the Prometheus Operator's CRDs: %w", err)
	}
	if len(crds) == 0 {
		return nil, fmt.Errorf("the Prometheus Operator %s module has no CRDs under example/prometheus-operator-crd", PrometheusOperatorVersion)
	}
	return crds, nil
}

// PrometheusOperatorBin returns the path of the operator at PrometheusOperatorVersion if it is in the
// cache, else "".
func PrometheusOperatorBin() string {
	cache, err := CacheDir()
	if err != nil {
		return ""
	}
	p := filepath.Join(prometheusOperatorDir(cache), "operator")
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}

// InstallPrometheusOperator builds the operator (its cmd/operator) at PrometheusOperatorVersion into the
// cache unless it is there (a few minutes; it needs go and the module proxy), and returns it as a
// Component.
func InstallPrometheusOperator(ctx context.Context) (Component, error) {
	start := time.Now()
	c := Component{Name: "prometheus-operator", Version: PrometheusOperatorVersion, Source: "cached"}
	cache, err := CacheDir()
	if err != nil {
		return c, err
	}
	dir := prometheusOperatorDir(cache)
	c.Path = filepath.Join(dir, "operator")
	if _, err := os.Stat(c.Path); err == nil {
		c.Took = time.Since(start)
		return c, nil
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		return c, fmt.Errorf("building the Prometheus Operator needs go on PATH: %w", ErrPrerequisite)
	}
	// The module's go.mod replaces its nested modules (pkg/apis/monitoring, pkg/client) by directories its
	// download lacks, so neither go install nor a build in its directory works: a module of tare's own
	// requires it at the release, which takes the nested modules at their tags.
	build := filepath.Join(filepath.Dir(dir), "build")
	for _, d := range []string{dir, build} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return c, fmt.Errorf("creating %s: %w", d, err)
		}
	}
	if err := os.WriteFile(filepath.Join(build, "go.mod"), []byte("module tarepobuild\n\ngo 1.24\n"), 0o644); err != nil {
		return c, fmt.Errorf("building the Prometheus Operator: %w", err)
	}
	pkg := prometheusOperatorModule + "/cmd/operator"
	if err := goCmd(ctx, gobin, build, "get", pkg+"@"+PrometheusOperatorVersion); err != nil {
		return c, fmt.Errorf("getting the Prometheus Operator %s: %w", PrometheusOperatorVersion, err)
	}
	err = userfile.Produce(c.Path, func(tmp string) error {
		return goCmd(ctx, gobin, build, "build", "-trimpath", "-o", tmp, pkg)
	})
	if err != nil {
		return c, fmt.Errorf("building the Prometheus Operator %s: %w", PrometheusOperatorVersion, err)
	}
	c.Source, c.Took = "built", time.Since(start)
	return c, nil
}
