package promconf

import (
	"fmt"
	"time"

	"github.com/prometheus/common/model"
	"sigs.k8s.io/yaml"
)

// DiscoveryOptions say how Discovery adapts the shipped configuration to a Prometheus outside the cluster.
type DiscoveryOptions struct {
	Kubeconfig string        // the kubeconfig Kubernetes service discovery uses to reach the API server; "" in the cluster
	Namespace  string        // the agents' namespace; "" keeps the shipped one (tare agent manifest's default)
	Interval   time.Duration // scrape and rule evaluation interval; 0 keeps the shipped one
	// TokenFile is the bearer token Prometheus presents to the agents; "" keeps the shipped one (the
	// ServiceAccount token of a Prometheus in the cluster).
	TokenFile string
}

// Discovery returns the shipped configuration with the tare-agent job's Kubernetes service discovery
// reading the cluster through a kubeconfig (kubeconfig_file, for a Prometheus that does not run in the
// cluster) and looking for the agents in another namespace, as o asks. Relabelling and every other setting
// stay as shipped.
func Discovery(o DiscoveryOptions) ([]byte, error) {
	cfg, job, err := shippedConfig()
	if err != nil {
		return nil, err
	}
	sds, _ := job["kubernetes_sd_configs"].([]any)
	if len(sds) == 0 {
		return nil, fmt.Errorf("the shipped %s's %s job has no kubernetes_sd_configs", ConfigFile, JobName)
	}
	for _, sd := range sds {
		m, ok := sd.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("the shipped %s's kubernetes_sd_configs entry is not a mapping", ConfigFile)
		}
		if o.Kubeconfig != "" {
			m["kubeconfig_file"] = o.Kubeconfig
		}
		if o.Namespace != "" {
			m["namespaces"] = map[string]any{"names": []string{o.Namespace}}
		}
	}
	if o.TokenFile != "" {
		auth, _ := job["authorization"].(map[string]any)
		if auth == nil {
			return nil, fmt.Errorf("the shipped %s's %s job has no authorization", ConfigFile, JobName)
		}
		auth["credentials_file"] = o.TokenFile
	}
	return marshal(cfg, o.Interval)
}

// shippedConfig parses the shipped configuration and finds the tare-agent job in it.
func shippedConfig() (cfg, job map[string]any, err error) {
	b, err := Read(ConfigFile)
	if err != nil {
		return nil, nil, err
	}
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		return nil, nil, fmt.Errorf("parsing the shipped %s: %w", ConfigFile, err)
	}
	job, err = findJob(cfg, JobName)
	return cfg, job, err
}

// marshal writes cfg, with the scrape and evaluation interval set when it is not 0.
func marshal(cfg map[string]any, interval time.Duration) ([]byte, error) {
	if interval > 0 {
		global, _ := cfg["global"].(map[string]any)
		if global == nil {
			global = map[string]any{}
			cfg["global"] = global
		}
		iv := model.Duration(interval).String()
		global["scrape_interval"], global["evaluation_interval"] = iv, iv
	}
	out, err := yaml.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("writing the configuration: %w", err)
	}
	return out, nil
}
