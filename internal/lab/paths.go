package lab

import (
	"os"
	"path/filepath"
)

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

// containerdDebugSocket is where containerd serves /debug/pprof.
func (p paths) containerdDebugSocket() string { return p.join("containerd", "debug.sock") }

// node is the directory of an extra node: laid out as a lab directory (its own pki, kubeconfigs,
// containerd, CNI, kubelet and pod logs), so the settings functions of node 1 serve it too.
func (p paths) node(name string) paths { return paths{p.join("nodes", name)} }

// nodes are the directories of the extra nodes found under DIR/nodes (whatever the state says).
func (p paths) nodes() []paths {
	ents, _ := os.ReadDir(p.join("nodes"))
	var out []paths
	for _, e := range ents {
		if e.IsDir() {
			out = append(out, p.node(e.Name()))
		}
	}
	return out
}
