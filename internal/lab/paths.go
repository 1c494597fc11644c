package lab

import "path/filepath"

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
