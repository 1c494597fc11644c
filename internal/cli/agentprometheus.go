package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/tare-dev/tare/internal/deploy"
	"github.com/tare-dev/tare/internal/lab"
	"github.com/tare-dev/tare/internal/output"
	"github.com/tare-dev/tare/internal/promconf"
)

// newAgentPrometheus is `tare agent prometheus`: the shipped Prometheus files, adapted to where Prometheus
// runs, written into a directory (issue 17).
func newAgentPrometheus(s streams, g *globalOptions) *cobra.Command {
	var o promconf.DiscoveryOptions
	var dir string
	var force bool
	cmd := &cobra.Command{
		Use:   "prometheus --dir DIR",
		Short: "Write a Prometheus configuration that discovers and scrapes tare agents, with rules and a dashboard",
		Long: `Write into DIR what a Prometheus needs to collect tare agents' metrics: prometheus.yml (the tare-agent
scrape job: Kubernetes service discovery of the agents' pods, relabelled with node, namespace and pod),
rules.yml (recording rules), rules_test.yml (their promtool unit tests) and dashboard.json (a Grafana
dashboard). The same files are in deploy/prometheus.

A Prometheus running in the cluster needs no flag: it presents its ServiceAccount's token to the agents,
which need that account bound to the ClusterRole ` + deploy.MetricsReaderRole + ` (or any role that may get the
non-resource URL /metrics, as kube-prometheus's prometheus-k8s). One running outside it (a laptop, the
lab's machine) reads the cluster through --kubeconfig and presents the token in --token-file (for
example kubectl create token ACCOUNT > FILE, for an account bound to that role). --namespace follows tare
agent manifest --namespace.

Kubernetes service discovery needs an upstream Prometheus: Debian's prometheus package is built without
it (tare lab install --prometheus builds ` + lab.PrometheusVersion + ` into the cache). Existing files are kept unless
--force.`,
		Example: `  tare agent manifest | kubectl apply -f -
  tare agent prometheus --dir prom --kubeconfig ~/.kube/config
  prometheus --config.file prom/prometheus.yml &
  tare report --prometheus http://localhost:9090 --window 10m`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if dir == "" {
				return usageError("--dir: give the directory to write the files into")
			}
			if o.Interval < 0 || (o.Interval > 0 && o.Interval < time.Second) {
				return usageError("--interval %v: want a second or more", o.Interval)
			}
			if o.Kubeconfig != "" {
				abs, err := filepath.Abs(o.Kubeconfig)
				if err != nil {
					return usageError("--kubeconfig: %w", err)
				}
				if _, err := os.Stat(abs); err != nil {
					return usageError("--kubeconfig: %w", err)
				}
				o.Kubeconfig = abs // Prometheus resolves a relative path against its configuration's directory
			}
			if o.TokenFile != "" {
				abs, err := filepath.Abs(o.TokenFile)
				if err != nil {
					return usageError("--token-file: %w", err)
				}
				if _, err := os.Stat(abs); err != nil {
					return usageError("--token-file: %w", err)
				}
				o.TokenFile = abs
			}
			files, err := writePrometheusDir(dir, o, force)
			if err != nil {
				return err
			}
			return render(s, g, promFilesView{Dir: dir, Files: files})
		},
	}
	f := cmd.Flags()
	f.StringVar(&dir, "dir", "", "directory to write the files into (created if missing)")
	f.StringVar(&o.Kubeconfig, "kubeconfig", "", "kubeconfig Prometheus reads the cluster with, when it runs outside the cluster")
	f.StringVar(&o.TokenFile, "token-file", "", "bearer token Prometheus presents to the agents, when it runs outside the cluster (default: its ServiceAccount's)")
	f.StringVar(&o.Namespace, "namespace", deploy.DefaultNamespace, "namespace of the agents (tare agent manifest --namespace)")
	f.DurationVar(&o.Interval, "interval", 0, "scrape and rule evaluation interval (default: the shipped 15s)")
	f.BoolVar(&force, "force", false, "overwrite files that exist")
	return cmd
}

// writePrometheusDir writes the shipped files into dir, prometheus.yml adapted by o, and returns their
// paths. It writes nothing when one exists and force is not set.
func writePrometheusDir(dir string, o promconf.DiscoveryOptions, force bool) ([]string, error) {
	cfg, err := promconf.Discovery(o)
	if err != nil {
		return nil, err
	}
	content := map[string][]byte{promconf.ConfigFile: cfg}
	var paths []string
	for _, name := range promconf.Files() {
		if content[name] == nil {
			if content[name], err = promconf.Read(name); err != nil {
				return nil, err
			}
		}
		p := filepath.Join(dir, name)
		if _, err := os.Stat(p); err == nil && !force {
			return nil, fmt.Errorf("%s exists: nothing written (--force overwrites it)", p)
		} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("checking %s: %w", p, err)
		}
		paths = append(paths, p)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating %s: %w", dir, err)
	}
	for i, name := range promconf.Files() {
		if err := os.WriteFile(paths[i], content[name], 0o644); err != nil {
			return nil, fmt.Errorf("writing %s: %w", paths[i], err)
		}
	}
	return paths, nil
}

// promFilesView is what tare agent prometheus wrote.
type promFilesView struct {
	Dir   string   `json:"dir"`
	Files []string `json:"files"`
}

func (v promFilesView) Table(w io.Writer) error {
	for _, f := range v.Files {
		fmt.Fprintln(w, "wrote", f)
	}
	_, err := fmt.Fprintf(w, "run: prometheus --config.file %s\n", filepath.Join(v.Dir, promconf.ConfigFile))
	return err
}

func (v promFilesView) JSON(w io.Writer) error { return output.JSON(w, v) }
