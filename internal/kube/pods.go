package kube

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// ErrNoKubeconfig means no kubeconfig was given or found: pods are then named by UID.
var ErrNoKubeconfig = errors.New("no kubeconfig: pass --kubeconfig or set KUBECONFIG to name pods")

// PodRef names a pod and, when known, the container.
type PodRef struct {
	Namespace, Name, Container string
}

// PodNamer resolves pod UIDs and container IDs to names through the API. It lists the pods once, and again
// (at most every refreshEvery) when asked about a UID it does not know. It is safe for concurrent use.
type PodNamer struct {
	client       kubernetes.Interface
	node         string
	Source       string // the kubeconfig in use
	refreshEvery time.Duration
	mu           sync.Mutex
	pods         map[string]PodRef            // pod UID -> pod
	containers   map[string]map[string]string // pod UID -> container ID -> container name
	listed       time.Time
	refreshing   bool
	lastErr      error
}

// ResolveKubeconfig returns the kubeconfig path kubectl would use: the flag, $KUBECONFIG (first existing
// entry), or ~/.kube/config if it exists.
func ResolveKubeconfig(flag string) (string, error) {
	if flag != "" {
		if _, err := os.Stat(flag); err != nil {
			return "", fmt.Errorf("kubeconfig %s: %w", flag, err)
		}
		return flag, nil
	}
	for _, p := range filepath.SplitList(os.Getenv("KUBECONFIG")) {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	if home, err := os.UserHomeDir(); err == nil {
		p := filepath.Join(home, ".kube", "config")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", ErrNoKubeconfig
}

// NewPodNamer connects with the kubeconfig at path and lists the pods of this node (node is the node name;
// when no pod matches it, all pods are listed). It fails if the API does not answer within the context.
func NewPodNamer(ctx context.Context, path, node string) (*PodNamer, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig %s: %w", path, err)
	}
	cfg.Timeout = 5 * time.Second
	cfg.UserAgent = "tare"
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	return newPodNamer(ctx, client, path, node)
}

func newPodNamer(ctx context.Context, client kubernetes.Interface, source, node string) (*PodNamer, error) {
	n := &PodNamer{client: client, node: node, Source: source, refreshEvery: 10 * time.Second}
	if err := n.list(ctx); err != nil {
		return nil, fmt.Errorf("listing pods with %s: %w", source, err)
	}
	return n, nil
}

func (n *PodNamer) list(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var items []corev1.Pod
	if n.node != "" {
		l, err := n.client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + n.node, ResourceVersion: "0"})
		if err != nil {
			return err
		}
		items = l.Items
	}
	if len(items) == 0 {
		l, err := n.client.CoreV1().Pods("").List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			return err
		}
		items = l.Items
	}
	pods := make(map[string]PodRef, len(items))
	containers := make(map[string]map[string]string, len(items))
	for _, p := range items {
		uid := string(p.UID)
		pods[uid] = PodRef{Namespace: p.Namespace, Name: p.Name}
		ids := map[string]string{}
		for _, list := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses, p.Status.EphemeralContainerStatuses} {
			for _, cs := range list {
				if id := containerID(cs.ContainerID); id != "" {
					ids[id] = cs.Name
				}
			}
		}
		containers[uid] = ids
	}
	n.setIndex(pods, containers)
	return nil
}

func (n *PodNamer) setIndex(pods map[string]PodRef, containers map[string]map[string]string) {
	if n.pods == nil { // the first list runs before anyone else holds the namer
		n.pods, n.containers, n.listed = pods, containers, time.Now()
		return
	}
	n.mu.Lock()
	n.pods, n.containers, n.listed = pods, containers, time.Now()
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
