package kube

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/tare-dev/tare/internal/bounded"
	"github.com/tare-dev/tare/internal/component"
	"github.com/tare-dev/tare/internal/explain"
	"github.com/tare-dev/tare/internal/pprof"
)

// Cluster is a connection to a cluster's API server for explain's rules, profiles and metrics.
type Cluster struct {
	Source string // the kubeconfig file(s), as Client.Source
	Host   string
	HTTP   *http.Client
	cs     kubernetes.Interface
}

// Connect opens a kubeconfig, found as NewClient finds it (path is --kubeconfig, "" to look as kubectl
// does); it does not contact the server. API calls time out after 10 s.
func Connect(path string) (*Cluster, error) {
	c, err := NewClient(path, Options{Timeout: 10 * time.Second})
	if err != nil {
		return nil, err
	}
	cs, err := c.Clientset()
	if err != nil {
		return nil, err
	}
	// Profiles take as long as they are asked to: the HTTP client has no overall timeout; callers bound it.
	pcfg := rest.CopyConfig(c.Config)
	pcfg.Timeout = 0
	hc, err := rest.HTTPClientFor(pcfg)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", c.Source, err)
	}
	return &Cluster{Source: c.Source, Host: strings.TrimSuffix(c.Config.Host, "/"), HTTP: hc, cs: cs}, nil
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
	return cancelOnClose{readCloser{bounded.Reader(resp.Body, maxMetrics, "kube-apiserver's /metrics"), resp.Body}, cancel}, nil
}

// maxMetrics bounds kube-apiserver's /metrics: tens of megabytes on a large cluster.
const maxMetrics = 256 << 20

type readCloser struct {
	io.Reader
	io.Closer
}

type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c cancelOnClose) Close() error { defer c.cancel(); return c.ReadCloser.Close() }

// Facts reads nodes, kube-system leases, control-plane pods and the cluster DNS Deployment.
func (c *Cluster) Facts(ctx context.Context) explain.ClusterFacts {
	f := explain.ClusterFacts{Source: c.Source, ControlPlanePods: map[string]int{}, Leases: []explain.LeaseFact{}}
	miss := func(what string, err error) { f.Unreadable = append(f.Unreadable, what+": "+err.Error()) }
	if nodes, err := c.cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{ResourceVersion: "0"}); err == nil {
		f.Nodes = len(nodes.Items)
	} else {
		miss("nodes", err)
	}
	now := time.Now()
	if ls, err := c.cs.CoordinationV1().Leases("kube-system").List(ctx, metav1.ListOptions{}); err == nil {
		for _, l := range ls.Items {
			lf := explain.LeaseFact{Name: l.Name}
			if l.Spec.HolderIdentity != nil {
				lf.Holder = *l.Spec.HolderIdentity
			}
			if l.Spec.LeaseDurationSeconds != nil {
				lf.DurationSeconds = *l.Spec.LeaseDurationSeconds
			}
			if l.Spec.LeaseTransitions != nil {
				lf.Transitions = *l.Spec.LeaseTransitions
			}
			if l.Spec.RenewTime != nil {
				lf.RenewedAgo = now.Sub(l.Spec.RenewTime.Time).Round(100 * time.Millisecond).Seconds()
			} else {
				lf.RenewedAgo = -1
			}
			f.Leases = append(f.Leases, lf)
		}
	} else {
		miss("leases in kube-system", err)
	}
	if pods, err := c.cs.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{LabelSelector: "component"}); err == nil {
		for _, p := range pods.Items {
			f.ControlPlanePods[p.Labels["component"]]++
		}
	} else {
		miss("pods in kube-system", err)
	}
	if ds, err := c.cs.AppsV1().Deployments("kube-system").List(ctx, metav1.ListOptions{LabelSelector: "k8s-app=kube-dns"}); err == nil {
		for _, d := range ds.Items {
			r := int32(1)
			if d.Spec.Replicas != nil {
				r = *d.Spec.Replicas
			}
			f.CoreDNS = &explain.Deployment{Namespace: d.Namespace, Name: d.Name, Replicas: r}
		}
	} else {
		miss("deployments in kube-system", err)
	}
	return f
}
