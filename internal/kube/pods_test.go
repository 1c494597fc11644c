package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestPodNamerIndex(t *testing.T) {
	t.Parallel()
	list := corev1.PodList{Items: []corev1.Pod{{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "coredns-1", UID: types.UID("uid-1")},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{
			{Name: "coredns", ContainerID: "containerd://abc123"},
		}},
	}}}
	var selectors []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		selectors = append(selectors, r.URL.Query().Get("fieldSelector"))
		if r.URL.Query().Get("fieldSelector") != "" {
			_ = json.NewEncoder(w).Encode(corev1.PodList{}) // no pod on that node: tare lists all
			return
		}
		_ = json.NewEncoder(w).Encode(list)
	}))
	defer srv.Close()
	n, err := newPodNamer(context.Background(), srv.Client(), srv.URL, "test", "node-a")
	if err != nil {
		t.Fatal(err)
	}
	if len(selectors) != 2 || selectors[0] != "spec.nodeName=node-a" || selectors[1] != "" {
		t.Errorf("requests with field selectors %q", selectors)
	}
	ref, ok := n.Name("uid-1", "abc123")
	if !ok || ref != (PodRef{Namespace: "kube-system", Name: "coredns-1", Container: "coredns"}) {
		t.Errorf("Name = %+v, %v", ref, ok)
	}
	if _, ok := n.Name("unknown", ""); ok {
		t.Error("unknown UID resolved")
	}
}

func TestPodNamerAPIErrors(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, `{"message":"pods is forbidden"}`, http.StatusForbidden)
	}))
	defer srv.Close()
	_, err := newPodNamer(context.Background(), srv.Client(), srv.URL, "test", "")
	if err == nil || !strings.Contains(err.Error(), "403") || !strings.Contains(err.Error(), "forbidden") {
		t.Errorf("forbidden list: %v", err)
	}
}

func TestContainerID(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"containerd://abc": "abc", "cri-o://x": "x", "docker://y": "y", "raw": "raw", "": ""} {
		if got := containerID(in); got != want {
			t.Errorf("containerID(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestPodNamerWatch: a pod the API server adds after the first list is named from the watch, which starts
// at the list's resource version and goes on from the last version it saw; a watch that expired (410) is
// followed by a new list.
func TestPodNamerWatch(t *testing.T) {
	t.Parallel()
	pod := func(uid, name, rv string) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID(uid), ResourceVersion: rv}}
	}
	type req struct{ watch, rv, selector string }
	reqs := make(chan req, 100)
	var n *PodNamer
	ready := make(chan struct{})
	namedB := make(chan bool, 1)
	lists := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		reqs <- req{q.Get("watch"), q.Get("resourceVersion"), q.Get("fieldSelector")}
		enc := json.NewEncoder(w)
		switch {
		case q.Get("watch") == "":
			lists++
			_ = enc.Encode(corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: fmt.Sprint(10 * lists)}, Items: []corev1.Pod{pod("uid-a", "a", "9")}})
		case q.Get("resourceVersion") == "10":
			_ = enc.Encode(map[string]any{"type": "ADDED", "object": pod("uid-b", "b", "11")})
		case q.Get("resourceVersion") == "11":
			<-ready
			_, ok := n.Name("uid-b", "")
			namedB <- ok
			_ = enc.Encode(map[string]any{"type": "ERROR", "object": metav1.Status{Code: http.StatusGone, Message: "too old"}})
		default:
			<-r.Context().Done()
		}
	}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var err error
	n, err = newPodNamer(ctx, srv.Client(), srv.URL, "test", "node-a")
	if err != nil {
		t.Fatal(err)
	}
	close(ready)
	go n.watch(ctx, srv.Client())
	var seen []req
	for len(seen) < 5 {
		select {
		case r := <-reqs:
			seen = append(seen, r)
		case <-time.After(15 * time.Second):
			t.Fatalf("requests %+v: want list, watch from 10, from 11, list again after the 410, watch from 20", seen)
		}
	}
	sel := "spec.nodeName=node-a"
	want := []req{{"", "0", sel}, {"1", "10", sel}, {"1", "11", sel}, {"", "0", sel}, {"1", "20", sel}}
	for i := range want {
		if seen[i] != want[i] {
			t.Errorf("request %d = %+v, want %+v", i, seen[i], want[i])
		}
	}
	if !<-namedB {
		t.Error("the pod the watch added is not named")
	}
}
