package lab

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/tare-dev/tare/internal/component"
	"github.com/tare-dev/tare/internal/lab/machine"
)

// kubeletConfigFile is where the lab writes the kubelet's configuration (kubeletConfig).
func kubeletConfigFile(p paths) string { return p.join("kubelet.yaml") }

// kubeletConfig is the kubelet's configuration file: cgroupfs under the lab's own cgroup root (so down
// removes exactly what the lab made), swap allowed, webhook authentication and authorization against
// the API server with client certificates from the lab CA, containerd's socket, and eviction thresholds
// low enough that a nearly full disk on a laptop does not taint the node.
func kubeletConfig(p paths) string { return kubeletConfigFor(p, cgroupRootName) }

// kubeletConfigFor is kubeletConfig with the kubelet's cgroup root (an extra node's is inside the lab's).
func kubeletConfigFor(p paths, cgroupRoot string) string {
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
`, cgroupRoot, p.containerdSocket(), filepath.Join(p.pki(), "ca.crt"), filepath.Join(p.pki(), "kubelet.crt"),
		filepath.Join(p.pki(), "kubelet.key"), kubeletPort, kubeletHealthz, p.join("pod-logs"))
}

// kubeletArgs are the kubelet's flags: most settings are in its configuration file; these are its
// kubeconfig, its root and certificate directories inside the lab directory, and the node's name and
// address.
func kubeletArgs(p paths, node, nodeIP string) []string {
	return []string{"--config", kubeletConfigFile(p),
		"--kubeconfig", p.kubeconfig("kubelet"), "--root-dir", p.join("kubelet"), "--cert-dir", p.join("kubelet", "pki"),
		"--hostname-override", node, "--node-ip", nodeIP}
}

// kubeProxyArgs are kube-proxy's flags: iptables mode for the lab's pod network, the machine's conntrack
// settings left alone, health and metrics on loopback, and profiling.
func kubeProxyArgs(p paths, node string) []string {
	return []string{"--kubeconfig", p.kubeconfig("kube-proxy"),
		"--hostname-override", node, "--proxy-mode", "iptables", "--cluster-cidr", clusterCIDR,
		// 0 leaves the machine's conntrack settings alone (the VM cannot change them, and down could not restore them).
		"--conntrack-max-per-core=0", "--conntrack-tcp-timeout-established=0", "--conntrack-tcp-timeout-close-wait=0",
		"--healthz-bind-address", "127.0.0.1:" + strconv.Itoa(proxyHealthz), "--metrics-bind-address", "127.0.0.1:" + strconv.Itoa(proxyMetrics),
		"--profiling"}
}

// startKubelet starts node 1's kubelet in the lab's cgroup root. It may start before the API server is
// ready: it needs only the API server serving to register its node, and retries until it can.
func (l *lab) startKubelet(tunings []Tuning) error {
	cg, err := machine.MakeCgroupRoot(cgroupRootName)
	l.mu.Lock()
	l.st.Cgroups = cg
	l.mu.Unlock()
	if err != nil {
		return err
	}
	if err := os.WriteFile(kubeletConfigFile(l.p), []byte(kubeletConfig(l.p)), 0o600); err != nil {
		return err
	}
	_, err = l.launch(component.Kubelet, l.args(component.Kubelet), tunings)
	return err
}

// startProxy starts node 1's kube-proxy.
func (l *lab) startProxy(tunings []Tuning) error {
	_, err := l.launch(component.KubeProxy, l.args(component.KubeProxy), tunings)
	return err
}

// waitNode waits for the node to be Ready. kube-proxy is waited for after the probe pod (waitProxy), which
// needs no Service.
func (l *lab) waitNode(ctx context.Context) error {
	c, err := l.client()
	if err != nil {
		return err
	}
	if err := l.waitFor(ctx, "node "+l.st.Node, 120*time.Second, func(ctx context.Context) error { return nodeReady(ctx, c, l.st.Node, l.start) }); err != nil {
		return err
	}
	l.step("node Ready")
	return nil
}

// waitProxy waits until kube-proxy is healthy.
func (l *lab) waitProxy(ctx context.Context) error {
	err := l.waitFor(ctx, component.KubeProxy, 30*time.Second, l.healthy(component.KubeProxy))
	l.step("kube-proxy healthy")
	return err
}
