package kube

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

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
