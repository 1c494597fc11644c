package machine

import (
	"slices"
	"testing"
)

func TestLabMounts(t *testing.T) {
	mounts := []string{"/", "/proc", "/lab/kubelet/pods/x/volumes/kubernetes.io~projected/kube-api-access",
		"/lab/containerd/state/io.containerd.runtime.v2.task/k8s.io/abc/rootfs", "/lab", "/labx/y",
		"/run/netns/cni-1", "/run/netns/cni-2", "/run/netns/other", "/lab/kubelet/pods/x/volumes/kubernetes.io~projected/kube-api-access"}
	got := labMounts(mounts, "/lab", []string{"cni-2"})
	want := []string{"/lab/kubelet/pods/x/volumes/kubernetes.io~projected/kube-api-access",
		"/lab/containerd/state/io.containerd.runtime.v2.task/k8s.io/abc/rootfs", "/run/netns/cni-1"}
	if !slices.Equal(got, want) {
		t.Errorf("labMounts = %q, want %q (deepest first; not the lab dir itself, not a sibling, not an older netns)", got, want)
	}
}
