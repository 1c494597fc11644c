package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// watchTimeout is how long the API server keeps one watch open (client-go's reflectors pick 5-10 minutes).
const watchTimeout = 5 * time.Minute

// errGone is a watch whose resource version the API server no longer has (410): list again.
var errGone = errors.New("resource version too old")

// watch keeps the index current from the API server's watch of the listed pods until ctx ends: added and
// changed pods are indexed as they come, so a new pod is named from its first process; after an error it
// waits a second and, when the resource version is gone, lists again.
func (n *PodNamer) watch(ctx context.Context, hc *http.Client) {
	n.mu.Lock()
	rv := n.listRV // from the list NewPodNamer made
	n.mu.Unlock()
	for ctx.Err() == nil {
		if rv == "" {
			var err error
			if rv, err = n.relist(ctx); err != nil {
				n.noteErr(err)
				sleep(ctx, time.Second)
				continue
			}
		}
		began := time.Now()
		next, err := n.watchOnce(ctx, hc, rv)
		if time.Since(began) < time.Second {
			sleep(ctx, time.Second) // a watch the server ends at once is not retried in a loop
		}
		switch {
		case errors.Is(err, errGone):
			rv = ""
		case err != nil:
			n.noteErr(err)
			rv = next
		default:
			rv = next
		}
	}
}

// relist lists the pods as the namer did at first and returns the list's resource version.
func (n *PodNamer) relist(ctx context.Context) (string, error) {
	if err := n.list(ctx); err != nil {
		return "", err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.listRV, nil
}

// watchOnce follows one watch from resource version rv and returns the last version seen.
func (n *PodNamer) watchOnce(ctx context.Context, hc *http.Client, rv string) (string, error) {
	n.mu.Lock()
	selector := n.selector
	n.mu.Unlock()
	q := url.Values{"watch": {"1"}, "resourceVersion": {rv}, "allowWatchBookmarks": {"true"},
		"timeoutSeconds": {fmt.Sprint(int(watchTimeout.Seconds()))}}
	if selector != "" {
		q.Set("fieldSelector", selector)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, n.server+"/api/v1/pods?"+q.Encode(), nil)
	if err != nil {
		return rv, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return rv, fmt.Errorf("watching pods: %w", err)
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusGone:
		return "", errGone
	default:
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return rv, fmt.Errorf("watching pods: %s: %s", resp.Status, strings.TrimSpace(string(b)))
	}
	return n.follow(resp.Body, rv)
}

// follow applies a watch's events to the index until the stream ends, returning the last resource version.
func (n *PodNamer) follow(r io.Reader, rv string) (string, error) {
	dec := json.NewDecoder(r)
	for {
		var ev struct {
			Type   string          `json:"type"`
			Object json.RawMessage `json:"object"`
		}
		if err := dec.Decode(&ev); err != nil {
			if errors.Is(err, io.EOF) {
				return rv, nil
			}
			return rv, fmt.Errorf("reading the pod watch: %w", err)
		}
		switch ev.Type {
		case "ADDED", "MODIFIED", "BOOKMARK":
			var p corev1.Pod
			if err := json.Unmarshal(ev.Object, &p); err != nil {
				return rv, fmt.Errorf("decoding a pod watch event: %w", err)
			}
			if p.ResourceVersion != "" {
				rv = p.ResourceVersion
			}
			if ev.Type != "BOOKMARK" {
				n.add(&p)
			}
		case "DELETED":
			// Kept: the pod's processes may still be ending; the next list drops it.
		case "ERROR":
			var st metav1.Status
			_ = json.Unmarshal(ev.Object, &st)
			if st.Code == http.StatusGone {
				return "", errGone
			}
			return rv, fmt.Errorf("pod watch: %s", st.Message)
		}
	}
}

// add indexes one pod.
func (n *PodNamer) add(p *corev1.Pod) {
	uid, ref, ids := podIndex(p)
	n.mu.Lock()
	defer n.mu.Unlock()
	n.pods[uid] = ref
	n.containers[uid] = ids
}

func (n *PodNamer) noteErr(err error) {
	n.mu.Lock()
	n.lastErr = err
	n.mu.Unlock()
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
