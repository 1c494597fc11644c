package redact

import (
	"strconv"
	"strings"
	"testing"
)

// nodeArgvs are command lines of the kind a Kubernetes node runs, most without any secret: what Join and
// Text see for every process, every second.
var nodeArgvs = [][]string{
	{"/usr/bin/kubelet", "--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf", "--kubeconfig=/etc/kubernetes/kubelet.conf", "--config=/var/lib/kubelet/config.yaml", "--container-runtime-endpoint=unix:///run/containerd/containerd.sock", "--pod-infra-container-image=registry.k8s.io/pause:3.9"},
	{"/usr/bin/containerd-shim-runc-v2", "-namespace", "k8s.io", "-id", "4c5e3b0d9f1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4", "-address", "/run/containerd/containerd.sock"},
	{"/pause"},
	{"kube-apiserver", "--advertise-address=10.0.0.1", "--allow-privileged=true", "--authorization-mode=Node,RBAC", "--client-ca-file=/etc/kubernetes/pki/ca.crt", "--enable-admission-plugins=NodeRestriction", "--enable-bootstrap-token-auth=true", "--etcd-servers=https://127.0.0.1:2379", "--service-account-key-file=/etc/kubernetes/pki/sa.pub", "--tls-private-key-file=/etc/kubernetes/pki/apiserver.key"},
	{"etcd", "--advertise-client-urls=https://10.0.0.1:2379", "--data-dir=/var/lib/etcd", "--listen-client-urls=https://127.0.0.1:2379,https://10.0.0.1:2379", "--name=node1"},
	{"/usr/local/bin/kube-proxy", "--config=/var/lib/kube-proxy/config.conf", "--hostname-override=node1"},
	{"/coredns", "-conf", "/etc/coredns/Corefile"},
	{"/bin/sh", "-c", "while true; do date >> /var/log/x.log; sleep 5; done"},
	{"iptables", "-w", "5", "-W", "100000", "-N", "KUBE-KUBELET-CANARY", "-t", "nat"},
	{"mount", "-t", "tmpfs", "-o", "size=1g", "tmpfs", "/var/lib/kubelet/pods/0b1c/volumes/kubernetes.io~projected/kube-api-access-x"},
	{"/usr/bin/python3", "/usr/bin/networkd-dispatcher", "--run-startup-triggers"},
	{"sleep", "3600"},
	{"redis-server", "*:6379"},
	{"curl", "-sSf", "-H", "Authorization: Bearer abcdef0123456789", "https://10.96.0.1:443/healthz"},
	{"app", "--token=s3cr3t", "--password", "hunter2", "postgres://u:pw@db:5432/x?sslmode=disable"},
}

// BenchmarkJoinRepeated is the steady state: the same command lines every pass, answered by the memo.
func BenchmarkJoinRepeated(b *testing.B) {
	for b.Loop() {
		for _, a := range nodeArgvs {
			Join(a)
		}
	}
}

// BenchmarkJoinFresh is a node starting processes: every command line is new (its last word a new PID),
// most of its words are not.
func BenchmarkJoinFresh(b *testing.B) {
	n := 0
	for b.Loop() {
		for _, a := range nodeArgvs {
			n++
			Join(append(a[:len(a):len(a)], strconv.Itoa(n)))
		}
	}
}

// BenchmarkText is the rules alone, without the memo or the shortcut, over joined command lines.
func BenchmarkText(b *testing.B) {
	lines := make([]string, len(nodeArgvs))
	for i, a := range nodeArgvs {
		lines[i] = strings.Join(a, " ")
	}
	for b.Loop() {
		for _, s := range lines {
			text(s)
		}
	}
}
