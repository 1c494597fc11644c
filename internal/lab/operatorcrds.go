package lab

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// PrometheusOperatorVersion is the release of the Prometheus Operator whose CustomResourceDefinitions
// (PodMonitor, PrometheusRule, ...) the agent's chart is checked against. They ship in its Go module,
// under example/prometheus-operator-crd.
const PrometheusOperatorVersion = "v0.85.0"

const prometheusOperatorModule = "github.com/prometheus-operator/prometheus-operator"

// PrometheusOperatorCRD returns the path of one of the operator's CRD manifests at
// PrometheusOperatorVersion, by its plural resource name ("podmonitors", "prometheusrules"), downloading the
// module into Go's module cache the first time.
func PrometheusOperatorCRD(ctx context.Context, plural string) (string, error) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("downloading the Prometheus Operator's CRDs needs go on PATH: %w", ErrPrerequisite)
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
	p := filepath.Join(info.Dir, "example", "prometheus-operator-crd", "monitoring.coreos.com_"+plural+".yaml")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("the Prometheus Operator %s has no CRD for %s: %w", PrometheusOperatorVersion, plural, err)
	}
	return p, nil
}
