package lab

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/tare-dev/tare/internal/userfile"
)

// Debian's prometheus package (2.42) is built without Kubernetes service discovery: it rejects
// kubernetes_sd_configs, so the shipped scrape configuration cannot run on it. tare builds upstream
// Prometheus from its Go module, as it builds the Kubernetes components, for the lab and its tests.

// PrometheusVersion is the upstream Prometheus release tare builds. Its Go module is tagged v0.MINOR.PATCH
// for 2.x (v2.54.1 is v0.54.1); 3.x uses other tags, so moving to it means changing the mapping below.
const PrometheusVersion = "v2.54.1"

const prometheusModule = "github.com/prometheus/prometheus"

// prometheusPrograms are the commands built from the module.
var prometheusPrograms = []string{"prometheus", "promtool"}

// PrometheusBin returns the path of upstream prometheus or promtool if it is in the cache, else "".
func PrometheusBin(program string) string {
	cache, err := CacheDir()
	if err != nil {
		return ""
	}
	p := filepath.Join(prometheusDir(cache), program)
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}

func prometheusDir(cache string) string {
	return filepath.Join(cache, "prometheus", PrometheusVersion, "bin")
}

// InstallPrometheus builds upstream prometheus and promtool at PrometheusVersion into the cache unless they
// are there (a few minutes; it needs go and the module proxy), and returns prometheus as a Component.
func InstallPrometheus(ctx context.Context) (Component, error) {
	start := time.Now()
	c := Component{Name: "prometheus", Version: PrometheusVersion, Source: "cached"}
	dir, built, err := installPrometheus(ctx)
	if built {
		c.Source = "built"
	}
	c.Path, c.Took = filepath.Join(dir, "prometheus"), time.Since(start)
	return c, err
}

func installPrometheus(ctx context.Context) (dir string, built bool, err error) {
	cache, err := CacheDir()
	if err != nil {
		return "", false, err
	}
	dir = prometheusDir(cache)
	missing := false
	for _, p := range prometheusPrograms {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			missing = true
		}
	}
	if !missing {
		return dir, false, nil
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		return dir, false, fmt.Errorf("building Prometheus %s needs go on PATH: %w", PrometheusVersion, ErrPrerequisite)
	}
	var out bytes.Buffer
	version := prometheusModule + "@v0." + strings.TrimPrefix(PrometheusVersion, "v2.")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return dir, false, fmt.Errorf("creating %s: %w", dir, err)
	}
	// Outside any module (the cache, not the caller's directory): the download must not touch a go.sum.
	cmd := exec.CommandContext(ctx, gobin, "mod", "download", "-json", version)
	cmd.Dir, cmd.Stdout, cmd.Env = dir, &out, append(buildEnv(), "GOWORK=off")
	if err := cmd.Run(); err != nil {
		return dir, false, fmt.Errorf("downloading %s: %w", version, err)
	}
	var info struct{ Dir string }
	if err := json.Unmarshal(out.Bytes(), &info); err != nil {
		return dir, false, fmt.Errorf("reading go mod download output: %w", err)
	}
	for _, p := range prometheusPrograms {
		if err := buildPrometheusProgram(ctx, gobin, info.Dir, dir, p); err != nil {
			return dir, false, err
		}
	}
	return dir, true, nil
}

// buildPrometheusProgram builds one command of the module in src into dir, through a temporary file of its
// own (two test binaries may build at once) renamed into place.
func buildPrometheusProgram(ctx context.Context, gobin, src, dir, program string) error {
	// The module's go.mod has replace directives, so it is built in its own directory, not installed.
	err := userfile.Produce(filepath.Join(dir, program), func(tmp string) error {
		return goCmd(ctx, gobin, src, "build", "-trimpath", "-o", tmp, "./cmd/"+program)
	})
	if err != nil {
		return fmt.Errorf("building %s %s: %w", program, PrometheusVersion, err)
	}
	return nil
}
