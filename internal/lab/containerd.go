package lab

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/tare-dev/tare/internal/component"
	"github.com/tare-dev/tare/internal/lab/images"
	"github.com/tare-dev/tare/internal/output"
)

// containerdConfigFile is where the lab writes containerd's configuration (containerdConfig).
func containerdConfigFile(p paths) string { return p.join("containerd", "config.toml") }

// containerdArgs are containerd's flags: everything else (root, state, socket, CRI) is in its
// configuration file.
func containerdArgs(p paths) []string { return []string{"--config", containerdConfigFile(p)} }

// containerd starts containerd on the lab's own socket and state and imports the lab images.
func (l *lab) containerd(ctx context.Context) error { return l.startContainerd(ctx, nil) }

// startContainerd starts the containerd of node 1 (n nil: on the lab's own socket and state, in the
// machine's network namespace) or of an extra node (in the node's directory and network namespace, with
// the node's pod range), and imports the lab images into it.
func (l *lab) startContainerd(ctx context.Context, n *ExtraNode) error {
	p, cni, suffix := l.p, cniConfig(l.p), ""
	switch {
	case n != nil:
		p = l.p.node(n.Name)
		cni, suffix = cniConfigFor(p, n.PodCIDR, false), " ("+n.Name+")"
	case len(l.st.ExtraNodes) > 0:
		cni = cniConfigFor(p, podCIDR, false) // machine.PodMasquerade instead
	}
	for _, d := range []string{"containerd", "cni/net.d", "cni/ipam", "pod-logs", "kubelet"} {
		if err := os.MkdirAll(p.join(d), 0o700); err != nil {
			return err
		}
	}
	if err := os.WriteFile(containerdConfigFile(p), []byte(containerdConfig(p)), 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(p.join("cni", "net.d", "10-tare-lab.conflist"), []byte(cni), 0o600); err != nil {
		return err
	}
	archives, err := images.Ensure(ctx)
	if err != nil {
		return err
	}
	if _, err := l.launchOn(n, component.Containerd, containerdArgs(p), nil); err != nil {
		return err
	}
	sock := p.containerdSocket()
	if err := l.waitFor(ctx, component.Containerd+suffix, 30*time.Second, func(ctx context.Context) error {
		return exec.CommandContext(ctx, l.bin.ctr, "--address", sock, "version").Run()
	}); err != nil {
		return err
	}
	l.step("containerd ready" + suffix)
	if err := importImages(ctx, l.bin.ctr, sock, archives); err != nil {
		return err
	}
	l.step("images imported" + suffix)
	return nil
}

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
		p.containerdDebugSocket(), p.join("containerd", "opt"), images.Pause.Name, p.join("containerd", "runc"), p.join("cni", "net.d"))
}

// cniConfig is the pod network: a bridge with the gateway on the host, host-local addresses kept in the
// lab directory, masquerade for traffic leaving the node, and portmap for hostPorts.
func cniConfig(p paths) string { return cniConfigFor(p, podCIDR, true) }

// cniConfigFor is cniConfig with the node's pod range (an extra node's bridge has the same name, inside
// the node's network namespace: the bridge plugin runs in containerd's) and, in a lab with several nodes,
// without the bridge plugin's masquerade, which would hide a pod's address from pods on other nodes; the
// lab's own rule (machine.PodMasquerade) masquerades only what leaves the pod network.
func cniConfigFor(p paths, subnet string, masq bool) string {
	return fmt.Sprintf(`{
  "cniVersion": "0.4.0",
  "name": %q,
  "plugins": [
    {"type": "bridge", "bridge": %q, "isGateway": true, "ipMasq": %t, "hairpinMode": true,
     "ipam": {"type": "host-local", "ranges": [[{"subnet": %q}]], "routes": [{"dst": "0.0.0.0/0"}], "dataDir": %q}},
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
`, cniNetworkName, bridgeName, masq, subnet, p.join("cni", "ipam"))
}

// importImages loads the archives into containerd's k8s.io namespace (where the CRI plugin looks).
func importImages(ctx context.Context, ctr, address string, archives []string) error {
	for _, a := range archives {
		cmd := exec.CommandContext(ctx, ctr, "--address", address, "-n", "k8s.io", "images", "import", a)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("importing %s into containerd: %w\n%s", filepath.Base(a), err, output.LastLines(out, 10))
		}
	}
	return nil
}
