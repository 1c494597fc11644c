package lab

import (
	"fmt"
	"path/filepath"
)

// Addresses and ports of a lab. Ports are the upstream defaults, except etcd's: Debian's etcd-server
// package may already run a system etcd on 2379.
const (
	etcdClientPort  = 12379
	etcdPeerPort    = 12380
	apiserverPort   = 6443
	kcmPort         = 10257
	schedulerPort   = 10259
	kubeletPort     = 10250
	kubeletHealthz  = 10248
	proxyMetrics    = 10249
	proxyHealthz    = 10256
	podCIDR         = "10.244.0.0/24"
	clusterCIDR     = "10.244.0.0/16"
	serviceCIDR     = "10.96.0.0/16"
	bridgeName      = "tare0"
	cgroupRootName  = "tare-lab"
	cniNetworkName  = "tare-lab"
	containerdNS    = "k8s.io"
	probePodName    = "tare-lab-probe"
	kwokNodePrefix  = "kwok-node-"
	kwokAnnotation  = "kwok.x-k8s.io/node"
	labManagedLabel = "tare.dev/lab"
)

// labPort is a port the lab listens on and the component that owns it.
type labPort struct {
	Port      int
	Component string
}

func labPorts(controlOnly bool) []labPort {
	ps := []labPort{{etcdClientPort, "etcd"}, {etcdPeerPort, "etcd (peer)"}, {apiserverPort, "kube-apiserver"},
		{kcmPort, "kube-controller-manager"}, {schedulerPort, "kube-scheduler"}}
	if !controlOnly {
		ps = append(ps, labPort{kubeletPort, "kubelet"}, labPort{kubeletHealthz, "kubelet (healthz)"},
			labPort{proxyMetrics, "kube-proxy (metrics)"}, labPort{proxyHealthz, "kube-proxy (healthz)"})
	}
	return ps
}

// paths of a lab directory.
type paths struct{ dir string }

func (p paths) join(elem ...string) string { return filepath.Join(append([]string{p.dir}, elem...)...) }
func (p paths) pki() string                { return p.join("pki") }
func (p paths) kubeconfig(who string) string {
	if who == "admin" {
		return p.join("kubeconfig")
	}
	return p.join("kubeconfigs", who+".kubeconfig")
}
func (p paths) containerdSocket() string { return p.join("containerd", "containerd.sock") }
func (p paths) containerdState() string  { return p.join("containerd", "state") }

// containerdConfig is containerd 1.6's configuration for the lab: its own root, state and socket, the
// CRI plugin on cgroupfs with the lab's sandbox image and CNI, and restrict_oom_score_adj (a container
// may not lower its OOM score below containerd's: without it, machines lacking CAP_SYS_RESOURCE fail
// every sandbox with runc's "can't get final child's PID from pipe").
func containerdConfig(p paths) string {
	return fmt.Sprintf(`version = 2
root = %q
state = %q
[grpc]
  address = %q
[ttrpc]
  address = %q
[debug]
  address = %q
[plugins."io.containerd.internal.v1.opt"]
  path = %q
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %q
  restrict_oom_score_adj = true
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = %q
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = %q
`, p.join("containerd", "root"), p.containerdState(), p.containerdSocket(), p.containerdSocket()+".ttrpc",
		p.join("containerd", "debug.sock"), p.join("containerd", "opt"), PauseImage.Name, p.join("containerd", "runc"), p.join("cni", "net.d"))
}

// cniConfig is the pod network: a bridge with the gateway on the host, host-local addresses kept in the
// lab directory, masquerade for traffic leaving the node, and portmap for hostPorts.
func cniConfig(p paths) string {
	return fmt.Sprintf(`{
  "cniVersion": "0.4.0",
  "name": %q,
  "plugins": [
    {"type": "bridge", "bridge": %q, "isGateway": true, "ipMasq": true, "hairpinMode": true,
     "ipam": {"type": "host-local", "ranges": [[{"subnet": %q}]], "routes": [{"dst": "0.0.0.0/0"}], "dataDir": %q}},
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
`, cniNetworkName, bridgeName, podCIDR, p.join("cni", "ipam"))
}

// kubeletConfig is the kubelet's configuration file: cgroupfs under the lab's own cgroup root (so down
// removes exactly what the lab made), swap allowed, webhook authentication and authorization against
// the API server with client certificates from the lab CA, containerd's socket, and eviction thresholds
// low enough that a nearly full disk on a laptop does not taint the node.
func kubeletConfig(p paths) string {
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: cgroupfs
cgroupRoot: /%s
failSwapOn: false
containerRuntimeEndpoint: unix://%s
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: %q}
authorization: {mode: Webhook}
tlsCertFile: %q
tlsPrivateKeyFile: %q
port: %d
healthzPort: %d
healthzBindAddress: 127.0.0.1
readOnlyPort: 0
podLogsDir: %q
clusterDomain: cluster.local
enableProfilingHandler: true
evictionHard: {"memory.available": "50Mi", "nodefs.available": "1%%", "imagefs.available": "1%%", "nodefs.inodesFree": "1%%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
`, cgroupRootName, p.containerdSocket(), filepath.Join(p.pki(), "ca.crt"), filepath.Join(p.pki(), "kubelet.crt"),
		filepath.Join(p.pki(), "kubelet.key"), kubeletPort, kubeletHealthz, p.join("pod-logs"))
}

// auditPolicy logs every request at Metadata level (who, what, when; no bodies, so no secrets).
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: Metadata
`
