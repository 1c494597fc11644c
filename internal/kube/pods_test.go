package kube

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
)

func TestPodNamerIndex(t *testing.T) {
	t.Parallel()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "coredns-1", UID: types.UID("uid-1")},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{
			{Name: "coredns", ContainerID: "containerd://abc123"},
		}},
	}
	n, err := newPodNamer(context.Background(), fake.NewSimpleClientset(pod), "fake", "")
	if err != nil {
		t.Fatal(err)
	}
	ref, ok := n.Name("uid-1", "abc123")
	if !ok || ref != (PodRef{Namespace: "kube-system", Name: "coredns-1", Container: "coredns"}) {
		t.Errorf("Name = %+v, %v", ref, ok)
	}
	if _, ok := n.Name("unknown", ""); ok {
		t.Error("unknown UID resolved")
	}
	n.refreshEvery = 0
	n.listed = time.Time{}
	_, _ = n.Name("unknown", "") // starts a background refresh; must not block or race
}

func TestContainerID(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"containerd://abc": "abc", "cri-o://x": "x", "docker://y": "y", "raw": "raw", "": ""} {
		if got := containerID(in); got != want {
			t.Errorf("containerID(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestResolveKubeconfig(t *testing.T) {
	t.Setenv("KUBECONFIG", "/nonexistent/a:/nonexistent/b")
	t.Setenv("HOME", t.TempDir())
	if _, err := ResolveKubeconfig(""); !errors.Is(err, ErrNoKubeconfig) {
		t.Errorf("no kubeconfig anywhere: %v", err)
	}
	if _, err := ResolveKubeconfig("/nonexistent/c"); err == nil {
		t.Error("a missing --kubeconfig was accepted")
	}
}
