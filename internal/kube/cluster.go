package kube

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/tare-dev/tare/internal/bounded"
	"github.com/tare-dev/tare/internal/component"
	"github.com/tare-dev/tare/internal/pprof"
)

// Cluster is a connection to a cluster's API server for explain's rules, profiles and metrics.
type Cluster struct {
	Source  string // the kubeconfig file(s), as Client.Source
	Context string // the context used ("" for the kubeconfig's current-context)
	Host    string
	HTTP    *http.Client
	cs      kubernetes.Interface
}

// Cluster is c as a connection for explain's rules, profiles and metrics, whatever c's own timeout: its
// clientset's API calls time out after 10 s, its HTTP client has no overall timeout (profiles take as long
// as they are asked to; callers bound them). It does not contact the server.
func (c *Client) Cluster() (*Cluster, error) {
	ccfg := rest.CopyConfig(c.Config)
	ccfg.Timeout = 10 * time.Second
	cs, err := kubernetes.NewForConfig(ccfg)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", c.Source, err)
	}
	pcfg := rest.CopyConfig(c.Config)
	pcfg.Timeout = 0
	hc, err := rest.HTTPClientFor(pcfg)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", c.Source, err)
	}
	return &Cluster{Source: c.Source, Context: c.Context, Host: strings.TrimSuffix(c.Config.Host, "/"), HTTP: hc, cs: cs}, nil
}

// Clientset is the cluster's client (its API calls time out after 10 s).
func (c *Cluster) Clientset() kubernetes.Interface { return c.cs }

// PprofTargets reach kube-apiserver directly and the kubelet of node through the API server's node proxy.
func (c *Cluster) PprofTargets(node string) []pprof.Target {
	ts := []pprof.Target{{Component: component.APIServer, Base: c.Host, Client: c.HTTP}}
	if node != "" {
		ts = append(ts, pprof.Target{Component: component.Kubelet, Base: c.Host + "/api/v1/nodes/" + node + "/proxy", Client: c.HTTP})
	}
	return ts
}

// Metrics returns kube-apiserver's /metrics (Prometheus text).
func (c *Cluster) Metrics(ctx context.Context) (io.ReadCloser, error) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.Host+"/metrics", nil)
	if err != nil {
		cancel()
		return nil, err
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("kube-apiserver /metrics: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		cancel()
		return nil, fmt.Errorf("kube-apiserver /metrics: %s", resp.Status)
	}
	return cancelOnClose{bounded.Body(resp.Body, maxMetrics, "kube-apiserver's /metrics"), cancel}, nil
}

// maxMetrics bounds kube-apiserver's /metrics: tens of megabytes on a large cluster.
const maxMetrics = 256 << 20

type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c cancelOnClose) Close() error { defer c.cancel(); return c.ReadCloser.Close() }
