package promconf

import (
	"errors"
	"fmt"
	"time"
)

// Target is one agent scraped by address.
type Target struct {
	Address string            // host:port of the agent's metrics listener
	Labels  map[string]string // labels the shipped relabelling would give it: node, namespace, pod
}

// StaticOptions say how Static rewrites the shipped configuration.
type StaticOptions struct {
	Targets  []Target
	Interval time.Duration // scrape and rule evaluation interval; 0 keeps the shipped one
	// TokenFile, when set, is the bearer token presented to agents that check their callers (tare agent
	// --auth kubernetes: TLS, as shipped). When empty the targets are agents serving plain HTTP to anyone
	// (--auth none, on loopback), and the job's TLS and authorization are dropped.
	TokenFile string
}

// Static returns the shipped configuration with the tare-agent job's Kubernetes service discovery and
// relabelling replaced by static targets. Everything else (honor_labels, rule files, other jobs) is kept, so
// a Prometheus outside Kubernetes, or a test, scrapes agents the way the shipped configuration does.
func Static(o StaticOptions) ([]byte, error) {
	if len(o.Targets) == 0 {
		return nil, errors.New("a static configuration needs at least one target")
	}
	cfg, job, err := shippedConfig()
	if err != nil {
		return nil, err
	}
	delete(job, "kubernetes_sd_configs")
	delete(job, "relabel_configs")
	if o.TokenFile == "" {
		delete(job, "scheme")
		delete(job, "tls_config")
		delete(job, "authorization")
	} else if auth, ok := job["authorization"].(map[string]any); ok {
		auth["credentials_file"] = o.TokenFile
	}
	static := make([]any, 0, len(o.Targets))
	for _, t := range o.Targets {
		static = append(static, map[string]any{"targets": []string{t.Address}, "labels": t.Labels})
	}
	job["static_configs"] = static
	return marshal(cfg, o.Interval)
}

func findJob(cfg map[string]any, name string) (map[string]any, error) {
	jobs, _ := cfg["scrape_configs"].([]any)
	for _, j := range jobs {
		if job, ok := j.(map[string]any); ok && job["job_name"] == name {
			return job, nil
		}
	}
	return nil, fmt.Errorf("the shipped %s has no %s job", ConfigFile, name)
}
