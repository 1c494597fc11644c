package classify

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestComponent(t *testing.T) {
	t.Parallel()
	tests := []struct{ exe, comm, cmdline, want string }{
		{"/usr/local/bin/kube-apiserver", "kube-apiserver", "kube-apiserver --etcd-servers=http://127.0.0.1:2379", "kube-apiserver"},
		{"/usr/bin/etcd", "etcd", "/usr/bin/etcd --data-dir /var/lib/etcd", "etcd"},
		{"/usr/bin/containerd-shim-runc-v2", "containerd-shim", "/usr/bin/containerd-shim-runc-v2 -namespace k8s.io -id abc", "containerd-shim"},
		{"", "kube-controller", "", "kube-controller-manager"}, // comm is cut at 15 characters
		{"/usr/local/bin/hyperkube", "hyperkube", "hyperkube kubelet --v=2", "kubelet"},
		{"/usr/bin/k3s", "k3s-server", "/usr/local/bin/k3s server", "k3s"},
		{"/coredns", "coredns", "/coredns -conf /etc/coredns/Corefile", "coredns"},
		{"/usr/bin/kubectl", "kubectl", "kubectl apply -f /etc/kubernetes/addons", "kubectl"},
		{"/usr/local/bin/kube-proxy (deleted)", "kube-proxy", "", "kube-proxy"},
		{"/usr/bin/bash", "bash", "bash -c sleep 1", ""},
		{"/usr/bin/python3", "python3", "python3 kubelet.py", ""},
	}
	for _, tt := range tests {
		if got := Component(tt.exe, tt.comm, tt.cmdline); got != tt.want {
			t.Errorf("Component(%q, %q, %q) = %q, want %q", tt.exe, tt.comm, tt.cmdline, got, tt.want)
		}
	}
}

func TestPodFromCgroup(t *testing.T) {
	t.Parallel()
	id := "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	uid := "8f6e5d4c-3b2a-1f0e-9d8c-7b6a5f4e3d2c"
	tests := []struct {
		name, path string
		want       Pod
		ok         bool
	}{
		{"cgroupfs burstable", "/kubepods/burstable/pod" + uid + "/" + id, Pod{uid, id, "burstable", "/"}, true},
		{"cgroupfs guaranteed", "/kubepods/pod" + uid + "/" + id, Pod{uid, id, "guaranteed", "/"}, true},
		{"pod level", "/kubepods/besteffort/pod" + uid, Pod{uid, "", "besteffort", "/"}, true},
		{"systemd driver", "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod8f6e5d4c_3b2a_1f0e_9d8c_7b6a5f4e3d2c.slice/cri-containerd-" + id + ".scope",
			Pod{uid, id, "burstable", "/"}, true},
		{"nested in kind", "/docker/aaaa/kubepods/besteffort/pod" + uid + "/" + id, Pod{uid, id, "besteffort", "/docker/aaaa/"}, true},
		{"lab node", "/tare-lab/tare-node-2/kubepods/besteffort/pod" + uid + "/" + id, Pod{uid, id, "besteffort", "/tare-lab/tare-node-2/"}, true},
		{"crio systemd guaranteed", "/kubepods.slice/kubepods-pod8f6e5d4c_3b2a_1f0e_9d8c_7b6a5f4e3d2c.slice/crio-" + id + ".scope", Pod{uid, id, "guaranteed", "/"}, true},
		{"not a pod", "/system.slice/containerd.service", Pod{}, false},
		{"kubepods root only", "/kubepods/burstable", Pod{}, false},
		{"root", "/", Pod{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, ok := PodFromCgroup(tt.path)
			if ok != tt.ok {
				t.Fatalf("ok = %v, want %v", ok, tt.ok)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestProcessPrecedence(t *testing.T) {
	t.Parallel()
	pod := "/kubepods/burstable/pod8f6e5d4c-3b2a-1f0e-9d8c-7b6a5f4e3d2c/" + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	tests := []struct {
		name                string
		exe, comm, cmd, cg  string
		kernel, self        bool
		wantGroup, wantKind string
	}{
		{"self wins", "/bin/tare", "tare", "tare measure", pod, false, true, "tare (self)", KindSelf},
		{"kernel thread", "", "kworker/0:1", "[kworker/0:1]", "/", true, false, "kernel threads", KindKernel},
		{"component in a pod", "/usr/local/bin/kube-proxy", "kube-proxy", "kube-proxy", pod, false, false, "kube-proxy", KindComponent},
		{"app in a pod", "/app", "app", "/app", pod, false, false, "pod 8f6e5d4c-3b2a-1f0e-9d8c-7b6a5f4e3d2c", KindPod},
		{"other", "/usr/bin/sleep", "sleep", "sleep 1", "/user.slice", false, false, "other", KindOther},
	}
	for _, tt := range tests {
		r := Process(tt.exe, tt.comm, tt.cmd, tt.cg, tt.kernel, tt.self)
		if r.Group != tt.wantGroup || r.Kind != tt.wantKind {
			t.Errorf("%s: %s/%s, want %s/%s", tt.name, r.Group, r.Kind, tt.wantGroup, tt.wantKind)
		}
	}
}
