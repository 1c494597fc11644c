package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/tare-dev/tare/internal/bounded"
)

// PodRef names a pod and, when known, the container.
type PodRef struct {
	Namespace, Name, Container string
}

// PodNamer resolves pod UIDs and container IDs to names through the API. It lists the pods once, and again
// (at most every refreshEvery) when asked about a UID it does not know. It is safe for concurrent use.
//
// It talks to the API with client-go's REST transport (kubeconfig, TLS, tokens, exec plugins) and decodes
// the pod list itself: the typed clientset would register every API group at start-up, tripling tare's
// memory on every node whether or not it ever names a pod.
type PodNamer struct {
	http         *http.Client
	server       string
	node         string
	Source       string // the kubeconfig in use
	refreshEvery time.Duration
	mu           sync.Mutex
	pods         map[string]PodRef            // pod UID -> pod
	containers   map[string]map[string]string // pod UID -> container ID -> container name
	listed       time.Time
	refreshing   bool
	lastErr      error
	selector     string // the field selector of the last list ("" for all pods), which the watch uses
	listRV       string // the last list's resource version, where a new watch starts
}

// NewPodNamer connects with a kubeconfig, found as NewClient finds it (path is --kubeconfig, "" to look as
// kubectl does; kubeContext is --context, "" for the current one), and lists the pods of this node (node is the node name; when no pod matches it, all pods
// are listed). It fails if the API does not answer within the context.
//
// Until ctx ends it also watches those pods, so that a pod created later is named from its first process
// on (the kubelet starts a pod's containers after the API server has bound it, so the watch hears of the
// pod first).
func NewPodNamer(ctx context.Context, path, kubeContext, node string) (*PodNamer, error) {
	c, err := NewClient(path, Options{Timeout: 5 * time.Second, Context: kubeContext})
	if err != nil {
		return nil, err
	}
	hc, err := c.HTTPClient()
	if err != nil {
		return nil, err
	}
	n, err := newPodNamer(ctx, hc, c.Config.Host, c.Source, node)
	if err != nil {
		return nil, err
	}
	// A watch is one long response: its client has no timeout; the server ends it (timeoutSeconds).
	stream := &http.Client{Transport: hc.Transport}
	go n.watch(ctx, stream)
	return n, nil
}

func newPodNamer(ctx context.Context, hc *http.Client, server, source, node string) (*PodNamer, error) {
	n := &PodNamer{http: hc, server: strings.TrimSuffix(server, "/"), node: node, Source: source, refreshEvery: 10 * time.Second}
	if err := n.list(ctx); err != nil {
		return nil, fmt.Errorf("listing pods with %s: %w", source, err)
	}
	return n, nil
}

// get lists pods (GET /api/v1/pods) with an optional field selector, served from the API server's cache.
func (n *PodNamer) get(ctx context.Context, fieldSelector string) ([]corev1.Pod, string, error) {
	q := url.Values{"resourceVersion": {"0"}}
	if fieldSelector != "" {
		q.Set("fieldSelector", fieldSelector)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, n.server+"/api/v1/pods?"+q.Encode(), nil)
	if err != nil {
		return nil, "", err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := n.http.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, "", fmt.Errorf("GET /api/v1/pods: %s: %s", resp.Status, strings.TrimSpace(string(b)))
	}
	var list corev1.PodList
	if err := json.NewDecoder(bounded.Reader(resp.Body, maxPodList, "the API server's pod list")).Decode(&list); err != nil {
		return nil, "", fmt.Errorf("decoding the pod list: %w", err)
	}
	return list.Items, list.ResourceVersion, nil
}

// maxPodList bounds a pod list read whole: 5,000 pods of a large cluster are tens of megabytes.
const maxPodList = 512 << 20

func (n *PodNamer) list(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var items []corev1.Pod
	var rv string
	var err error
	selector := ""
	if n.node != "" {
		selector = "spec.nodeName=" + n.node
		if items, rv, err = n.get(ctx, selector); err != nil {
			return err
		}
	}
	if len(items) == 0 {
		selector = ""
		if items, rv, err = n.get(ctx, ""); err != nil {
			return err
		}
	}
	pods := make(map[string]PodRef, len(items))
	containers := make(map[string]map[string]string, len(items))
	for i := range items {
		uid, ref, ids := podIndex(&items[i])
		pods[uid], containers[uid] = ref, ids
	}
	n.setIndex(pods, containers, selector, rv)
	return nil
}

// podIndex is what the namer keeps of a pod: its UID, name and container IDs.
func podIndex(p *corev1.Pod) (string, PodRef, map[string]string) {
	ids := map[string]string{}
	for _, list := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses, p.Status.EphemeralContainerStatuses} {
		for _, cs := range list {
			if id := containerID(cs.ContainerID); id != "" {
				ids[id] = cs.Name
			}
		}
	}
	return string(p.UID), PodRef{Namespace: p.Namespace, Name: p.Name}, ids
}

func (n *PodNamer) setIndex(pods map[string]PodRef, containers map[string]map[string]string, selector, rv string) {
	n.mu.Lock()
	n.pods, n.containers, n.listed, n.selector, n.listRV = pods, containers, time.Now(), selector, rv
	n.mu.Unlock()
}

// containerID strips the runtime scheme: containerd://abc -> abc.
func containerID(s string) string {
	if _, id, ok := strings.Cut(s, "://"); ok {
		return id
	}
	return s
}

// Name returns the pod (and container) for a pod UID and container ID from a cgroup path. It never waits
// for the network: a UID it does not know starts a background refresh of the pod list (at most every
// refreshEvery) and is reported unknown this time.
func (n *PodNamer) Name(uid, container string) (PodRef, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	ref, ok := n.pods[uid]
	if !ok {
		if !n.refreshing && time.Since(n.listed) > n.refreshEvery {
			n.refreshing = true
			go func() {
				err := n.list(context.Background())
				n.mu.Lock()
				n.refreshing, n.lastErr = false, err
				n.mu.Unlock()
			}()
		}
		return PodRef{}, false
	}
	ref.Container = n.containers[uid][container]
	return ref, true
}
