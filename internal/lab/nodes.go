package lab

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/tare-dev/tare/internal/component"
	"github.com/tare-dev/tare/internal/lab/machine"
)

// The extra nodes of a lab started with UpOptions.Nodes > 1: node 1 is the machine, as in a one-node lab;
// each further node (machine/nodenet.go for its network) runs its own containerd, kubelet and kube-proxy in its
// network namespace, with its own directory DIR/nodes/NAME, certificates, cgroup root (inside the lab's,
// so down's cgroup walk takes it) and pod range, joined to the one control plane.

// extraNodes lists the nodes an up with these options starts beyond the first.
func (o UpOptions) extraNodes() []ExtraNode {
	var out []ExtraNode
	for n := 2; n <= o.Nodes; n++ {
		out = append(out, machine.NewExtraNode(n))
	}
	return out
}

// checkNodes says whether the machine can run the extra nodes: root, a node of its own (not control
// plane only) and nsenter and unshare (util-linux) on PATH.
func (o UpOptions) checkNodes() (nsenter string, err error) {
	if o.Nodes <= 1 {
		return "", nil
	}
	if o.Nodes > MaxNodes {
		return "", fmt.Errorf("--nodes %d: at most %d", o.Nodes, MaxNodes)
	}
	if o.ControlPlaneOnly {
		return "", fmt.Errorf("%d nodes need root and a lab with nodes (not control plane only): %w", o.Nodes, ErrPrerequisite)
	}
	for _, prog := range []string{"unshare", "ip", "sysctl"} {
		if _, err := exec.LookPath(prog); err != nil {
			return "", fmt.Errorf("%d nodes need %s on PATH (util-linux, iproute2, procps): %w", o.Nodes, prog, ErrPrerequisite)
		}
	}
	nsenter, err = exec.LookPath("nsenter")
	if err != nil {
		return "", fmt.Errorf("%d nodes need nsenter on PATH (util-linux): %w", o.Nodes, ErrPrerequisite)
	}
	return nsenter, nil
}

// nodeNetworks makes the bridge and each extra node's network, recording each in the state first so that
// down removes it after a crash.
func (l *lab) nodeNetworks() error {
	nodes := l.opts.extraNodes()
	if len(nodes) == 0 {
		return nil
	}
	l.st.ExtraNodes = nodes
	if err := l.st.save(); err != nil {
		return err
	}
	if err := machine.MakeNodesBridge(podCIDR, clusterCIDR); err != nil {
		return err
	}
	for _, n := range nodes {
		if err := machine.MakeNodeNetwork(n, clusterCIDR); err != nil {
			return err
		}
	}
	l.step("node networks")
	return nil
}

// runtimes starts node 1's containerd and the extra nodes' together.
func (l *lab) runtimes(ctx context.Context) error {
	if len(l.st.ExtraNodes) == 0 {
		return l.containerd(ctx)
	}
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return l.containerd(ctx) })
	for _, n := range l.st.ExtraNodes {
		g.Go(func() error { return l.startContainerd(ctx, &n) })
	}
	return g.Wait()
}

// startExtraNodes starts each extra node's kubelet and kube-proxy and waits until every one is Ready.
func (l *lab) startExtraNodes(ctx context.Context, tunings []Tuning) error {
	if len(l.st.ExtraNodes) == 0 {
		return nil
	}
	c, err := l.client()
	if err != nil {
		return err
	}
	for _, n := range l.st.ExtraNodes {
		if err := l.nodeFiles(n); err != nil {
			return fmt.Errorf("preparing %s: %w", n.Name, err)
		}
		if err := makeNodeCgroup(l.st.Cgroups, n.Name); err != nil {
			return err
		}
		if _, err := l.launchOn(&n, component.Kubelet, l.nodeArgs(component.Kubelet, n), tunings); err != nil {
			return err
		}
		if _, err := l.launchOn(&n, component.KubeProxy, l.nodeArgs(component.KubeProxy, n), tunings); err != nil {
			return err
		}
	}
	for _, n := range l.st.ExtraNodes {
		if err := l.waitFor(ctx, "node "+n.Name, 120*time.Second, func(ctx context.Context) error { return nodeReady(ctx, c, n.Name, l.start) }); err != nil {
			return err
		}
	}
	l.step(fmt.Sprintf("%d nodes Ready", len(l.st.ExtraNodes)+1))
	return nil
}

// nodeFiles writes an extra node's directory: its kubelet's serving certificate (for its own name and
// address) and client kubeconfig (as system:node:NAME, which the Node authorizer wants), kube-proxy's
// kubeconfig, the CA, and the kubelet configuration with the node's cgroup root. A kept directory keeps them.
func (l *lab) nodeFiles(n ExtraNode) error {
	p := l.p.node(n.Name)
	if err := os.MkdirAll(p.pki(), 0o700); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p.kubeconfig("kubelet")), 0o700); err != nil {
		return err
	}
	serving, client := "kubelet-"+n.Name, "kubelet-client-"+n.Name
	if _, err := os.Stat(l.pki.Path(client + ".crt")); err != nil {
		if err := l.pki.Serving(serving, []string{n.Name}, []net.IP{net.ParseIP(n.Address)}); err != nil {
			return err
		}
		if err := l.pki.Client(client, KubeletIdentity(n.Name)); err != nil {
			return err
		}
	}
	for from, to := range map[string]string{"ca.crt": "ca.crt", serving + ".crt": "kubelet.crt", serving + ".key": "kubelet.key"} {
		b, err := os.ReadFile(l.pki.Path(from))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(p.pki(), to), b, 0o600); err != nil {
			return err
		}
	}
	if err := l.pki.Kubeconfig(p.kubeconfig("kubelet"), client, l.st.Server); err != nil {
		return err
	}
	if err := l.pki.Kubeconfig(p.kubeconfig("kube-proxy"), "kube-proxy", l.st.Server); err != nil {
		return err
	}
	return os.WriteFile(kubeletConfigFile(p), []byte(kubeletConfigFor(p, nodeCgroupRoot(n.Name))), 0o600)
}

// nodeCgroupRoot is an extra node's kubelet cgroup root: inside the lab's, so down's walk of the lab's
// cgroups stops its pods and removes it.
func nodeCgroupRoot(node string) string { return cgroupRootName + "/" + node }

// makeNodeCgroup makes an extra node's cgroup root under each of the lab's (roots, made by node 1),
// copying cpuset.cpus and cpuset.mems from the parent as machine.MakeCgroupRoot does.
func makeNodeCgroup(roots []string, node string) error {
	var errs []error
	for _, r := range roots {
		d := filepath.Join(r, node)
		if err := os.Mkdir(d, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			errs = append(errs, fmt.Errorf("creating the cgroup of %s: %w", node, err))
			continue
		}
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			if b, err := os.ReadFile(filepath.Join(r, f)); err == nil {
				_ = os.WriteFile(filepath.Join(d, f), b, 0o644)
			}
		}
	}
	return errors.Join(errs...)
}

// ExtraNode is a real node of the lab beyond the first (machine.ExtraNode: its network namespace,
// addresses and pod range).
type ExtraNode = machine.ExtraNode

// MaxNodes is the most real nodes a lab runs (MaxNodes).
const MaxNodes = machine.MaxNodes
